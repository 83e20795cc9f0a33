/**
 * `addr.name` wherever a path has `{contractAddress}/{contractName}`: the one segment is split
 * into the two before routing, so every such route (present and future) accepts both forms
 * with one rule instead of a second route each. A Stacks address never contains a dot, so a
 * dot in the address position can only be this form.
 */

/** Path prefixes followed by `{contractAddress}/{contractName}`. */
const CONTRACT_PATH_PREFIXES = [
  '/contract-calls/abi/',
  '/contract-calls/read-only/',
  '/admin/cache/contracts/',
] as const;

/** The URL with an `addr.name` segment after a contract path prefix split in two; else unchanged. */
export function splitContractId(url: string): string {
  for (const prefix of CONTRACT_PATH_PREFIXES) {
    if (!url.startsWith(prefix)) continue;
    const start = prefix.length;
    let end = start;
    while (end < url.length && url[end] !== '/' && url[end] !== '?') end++;
    const dot = url.indexOf('.', start);
    if (dot < 0 || dot >= end) return url;
    return `${url.slice(0, dot)}/${url.slice(dot + 1)}`;
  }
  return url;
}

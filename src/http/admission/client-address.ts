/**
 * Who is asking, as an address (docs/access-control.md). Behind `hops` proxies, each proxy
 * appends the address it received the request from to X-Forwarded-For, so the entry `hops`
 * places from the right was written by the outermost proxy we trust: that is the client.
 * Entries further left were written by the client itself and prove nothing, which is why the
 * leftmost entry is only used when the header is shorter than the proxy chain.
 */
export function clientAddress(
  socketAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
  hops: number,
): string {
  const socket = socketAddress ?? 'unknown';
  if (hops <= 0 || forwardedFor === undefined) return socket;
  const header = Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor;
  const entries = header
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) return socket;
  const index = Math.max(0, entries.length - hops);
  return entries[index] as string;
}

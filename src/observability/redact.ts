/**
 * The one redaction of secrets (docs/access-control.md): every error message and log line
 * that could carry a URL, a header or an upstream's text goes through `redact` first.
 *
 * What it hides, each replaced by `[redacted]`:
 * - credentials in URLs (`scheme://user:password@host`);
 * - every value of a URL's query (`?apikey=...&x=...`): providers take keys there, and a
 *   query value is never needed to understand an error;
 * - bearer tokens and `x-api-key` header values written as text;
 * - any value registered as a secret at start-up (ADMIN_TOKEN, upstream keys, the Redis
 *   password, API keys), wherever it appears.
 */
export const REDACTED = '[redacted]';

const secrets = new Set<string>();

/** Register a value that must never be printed (values shorter than 4 characters are ignored). */
export function registerSecret(value: string | undefined): void {
  if (value !== undefined && value.length >= 4) secrets.add(value);
}

const URL_CREDENTIALS = /([a-z][a-z0-9+.-]*:\/\/)[^\s/@"'<>]+@/gi;
const QUERY_VALUE = /([?&][^\s=&#"'<>?]+=)[^\s&#"'<>]+/g;
const BEARER = /\b(bearer\s+)[^\s"',;]+/gi;
const API_KEY_HEADER = /\b(x-api-key\s*[:=]\s*"?)[^\s"',;]+/gi;

export function redact(text: string): string {
  let out = text
    .replace(URL_CREDENTIALS, `$1${REDACTED}@`)
    .replace(QUERY_VALUE, `$1${REDACTED}`)
    .replace(BEARER, `$1${REDACTED}`)
    .replace(API_KEY_HEADER, `$1${REDACTED}`);
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}

/**
 * The one redaction of secrets (docs/access-control.md). Two tools, for two kinds of text:
 *
 * - `SecretRedactor` replaces the configured secrets themselves (src/config/secrets.ts lists
 *   them) and nothing else. It is what cleans an upstream's answers before the gateway reads,
 *   caches or passes them on: a node's body must reach a client byte for byte unless it holds
 *   a secret, so nothing that merely looks like one is touched there.
 * - `redact` is for error messages and log lines, which may carry a URL, a header or an
 *   upstream's text: besides the configured secrets (registered at start-up), it hides
 *   whatever has the shape of a credential, each replaced by `[redacted]`:
 *   - credentials in URLs (`scheme://user:password@host`);
 *   - every value of a URL's query (`?apikey=...&x=...`): providers take keys there, and a
 *     query value is never needed to understand an error;
 *   - bearer tokens, `Authorization` and `x-api-key` values written as text;
 *   - the value of anything named like a credential: `key=`, `api_key=`, `apikey=`,
 *     `token=`, `password=`, `secret=` (and `"password":"..."` in JSON).
 *
 * Short secrets. A configured secret of at least 8 characters is replaced wherever it occurs.
 * A shorter one is replaced only where it stands as a whole word (not inside a longer run of
 * letters, digits, `_` or `-`): replacing `k` or `0a1b` everywhere would turn node answers
 * (hex values, contract sources) into garbage, while an upstream that echoes a key still
 * writes it as a value of its own (`apikey=k&`, `x-api-key: k`, `"k"`), where it is caught.
 * Such a key is guessable anyway; docs/access-control.md asks for long random ones.
 */
const REDACTED = '[redacted]';

/** Secrets shorter than this are replaced only where they stand as a whole word. */
const WHOLE_WORD_BELOW = 8;

/** The characters a whole word of a short secret must not touch on either side. */
const WORD_CHAR = 'A-Za-z0-9_\\-';

/** Replaces a fixed set of secret values in text. */
export class SecretRedactor {
  /** Long spellings, longest first: checked with `includes` before any regular expression runs. */
  readonly #anywhere: readonly string[];
  readonly #anywhereRe: RegExp | undefined;
  /** Short spellings, as whole words. */
  readonly #words: RegExp | undefined;
  readonly #wordsTest: RegExp | undefined;

  constructor(secrets: Iterable<string | undefined>) {
    const long = new Set<string>();
    const short = new Set<string>();
    for (const secret of secrets) {
      if (secret === undefined || secret.trim() === '') continue;
      for (const spelling of spellingsOf(secret)) {
        (spelling.length >= WHOLE_WORD_BELOW ? long : short).add(spelling);
      }
    }
    // Longest first, so that a secret holding another is replaced whole.
    const byLength = (a: string, b: string) => b.length - a.length;
    this.#anywhere = [...long].sort(byLength);
    this.#anywhereRe =
      long.size === 0 ? undefined : new RegExp(this.#anywhere.map(escapeRegExp).join('|'), 'g');
    if (short.size > 0) {
      const source = `(?<![${WORD_CHAR}])(?:${[...short].sort(byLength).map(escapeRegExp).join('|')})(?![${WORD_CHAR}])`;
      this.#words = new RegExp(source, 'g');
      this.#wordsTest = new RegExp(source);
    }
  }

  /** Whether there is nothing to replace (no secret configured). */
  get empty(): boolean {
    return this.#anywhereRe === undefined && this.#words === undefined;
  }

  /** `text` with every secret replaced; the very string given when none occurs (nothing copied). */
  redact(text: string): string {
    let out = text;
    if (this.#anywhereRe !== undefined && this.#anywhere.some((s) => out.includes(s))) {
      out = out.replace(this.#anywhereRe, REDACTED);
    }
    if (this.#words !== undefined && this.#wordsTest!.test(out)) out = out.replace(this.#words, REDACTED);
    return out;
  }
}

/**
 * The ways a secret is written back by whoever echoes it: as given, percent-encoded (a URL's
 * query), escaped inside a JSON string, escaped as HTML (an HTML error page), and, for a value
 * given percent-encoded (as a URL's query holds it), decoded.
 */
function spellingsOf(secret: string): string[] {
  const out = new Set([secret, JSON.stringify(secret).slice(1, -1), escapeHtml(secret)]);
  try {
    out.add(encodeURIComponent(secret));
    out.add(decodeURIComponent(secret));
  } catch {
    // Not a well-formed percent-encoding (or a lone surrogate): only the other spellings.
  }
  return [...out].filter((s) => s.trim() !== '');
}

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const registered = new Set<string>();
let registeredRedactor = new SecretRedactor([]);

/** Register a configured value that no message or log line may show. */
export function registerSecret(value: string | undefined): void {
  if (value === undefined || value.trim() === '' || registered.has(value)) return;
  registered.add(value);
  registeredRedactor = new SecretRedactor(registered);
}

/** The registered secrets, replaced (nothing else). */
export function redactSecrets(text: string): string {
  return registeredRedactor.redact(text);
}

const URL_CREDENTIALS = /([a-z][a-z0-9+.-]*:\/\/)[^\s/@"'<>]+@/gi;
const QUERY_VALUE = /([?&][^\s=&#"'<>?]+=)[^\s&#"'<>]+/g;
/** A credential written as text: up to a space, quote or bracket (one already replaced counts as one). */
const VALUE = `(?:\\[redacted\\]|[^\\s"',;()<>[\\]{}]+)`;
const BEARER = new RegExp(`\\b(bearer\\s+)${VALUE}`, 'gi');
const AUTHORIZATION = new RegExp(`\\b(authorization\\s*[:=]\\s*"?(?:[a-z][\\w-]*\\s+)?)${VALUE}`, 'gi');
const API_KEY_HEADER = new RegExp(`\\b(x-api-key\\s*[:=]\\s*"?)${VALUE}`, 'gi');
/** Words whose value is a credential: `key`, `apikey`, `api_key`, `x-api-key`, `access_token`, `client_secret`... */
const CREDENTIAL_NAME = '(?:[a-z0-9]+[_-])*(?:api[_-]?key|key|token|password|passwd|pwd|secret)';
const NAMED_VALUE = new RegExp(
  `\\b(${CREDENTIAL_NAME}\\s*=\\s*)(?:"[^"]*"|'[^']*'|\\[redacted\\]|[^\\s"'&,;()<>[\\]{}]+)`,
  'gi',
);
const JSON_NAMED_VALUE = new RegExp(`("${CREDENTIAL_NAME}"\\s*:\\s*")(?:[^"\\\\]|\\\\.)*`, 'gi');

/** What looks like a credential whatever the route: named values, bearer tokens, headers. */
function redactNamed(text: string): string {
  return text
    .replace(URL_CREDENTIALS, `$1${REDACTED}@`)
    .replace(AUTHORIZATION, `$1${REDACTED}`)
    .replace(BEARER, `$1${REDACTED}`)
    .replace(API_KEY_HEADER, `$1${REDACTED}`)
    .replace(NAMED_VALUE, `$1${REDACTED}`)
    .replace(JSON_NAMED_VALUE, `$1${REDACTED}`);
}

/** A message or log text with every secret, and everything shaped like one, replaced. */
export function redact(text: string): string {
  // The secrets first: a pattern could otherwise replace part of one and leave the rest.
  return redactNamed(redactSecrets(text).replace(QUERY_VALUE, `$1${REDACTED}`));
}

/**
 * A request's URL for the access log. `keepQueryValues` (the public API routes, whose query is
 * the read's parameters: `tip`, `ttl`, ...) keeps the query's values except secrets and
 * credential-named ones; every other route's query values are hidden (`?token=[redacted]`):
 * an admin or ops route's query may hold the admin token, and so may a misspelt one.
 */
export function loggedUrl(url: string, keepQueryValues: boolean): string {
  const clean = redactSecrets(url);
  const q = clean.indexOf('?');
  if (q < 0) return clean;
  if (keepQueryValues) return redactNamed(clean);
  const hidden = clean
    .slice(q + 1)
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      // A part without a name (`?s3cr3t`) may be the value itself.
      return eq < 0 ? (part === '' ? '' : REDACTED) : `${part.slice(0, eq + 1)}${REDACTED}`;
    });
  return `${clean.slice(0, q)}?${hidden.join('&')}`;
}

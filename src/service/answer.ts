/**
 * A success ready to send, as every service entry point returns it: the HTTP layer (or a
 * batch, which wraps several) sends it as is, without knowing how it was made.
 */
export interface RenderedAnswer {
  readonly status: number;
  /** Response headers: Cache-Status and Age where a cache answered, and the Content-Type. */
  readonly headers: Readonly<Record<string, string>>;
  /** The JSON text of the success envelope. */
  readonly body: string;
}

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

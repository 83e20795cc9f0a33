/**
 * The s-expressions of Clarity source, as read by reader.ts and printed by printer.ts: enough of
 * the language's surface to find what a contract calls and reads (docs/events.md), not a
 * type-checker. Positions are byte offsets into the source, for error messages.
 */
export type SExpr =
  | { readonly kind: 'list'; readonly items: readonly SExpr[] }
  | { readonly kind: 'tuple'; readonly entries: readonly TupleEntry[] }
  | { readonly kind: 'atom'; readonly name: string }
  | { readonly kind: 'int'; readonly value: bigint }
  | { readonly kind: 'uint'; readonly value: bigint }
  | { readonly kind: 'string'; readonly value: string; readonly utf8: boolean }
  | { readonly kind: 'buffer'; readonly hex: string }
  /**
   * 'SP..., 'SP....name (contract), or .name (a contract of the deployer: `address` undefined);
   * `trait` names a trait of that contract ('SP....name.trait, .name.trait in use-trait/impl-trait).
   */
  | {
      readonly kind: 'principal';
      readonly address: string | undefined;
      readonly contract: string | undefined;
      readonly trait?: string;
    };

export interface TupleEntry {
  readonly key: string;
  readonly value: SExpr;
}

export class ClaritySyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(`${message} at offset ${offset}`);
    this.name = 'ClaritySyntaxError';
  }
}

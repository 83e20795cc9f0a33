/**
 * What one contract's source says about each of its functions, from the contract alone: the
 * contracts it names by literal `contract-call?`, the functions of its own it calls (by name at
 * the head of a list or handed as a value to `map`, `fold` and `filter`), whether it
 * reads the chain's context (block heights, balances, block info, `at-block`) and whether it
 * calls a contract it cannot name statically (a trait parameter). dependencies.ts follows the
 * calls transitively. See docs/events.md.
 */
import { readClarity, type SExpr } from '../source/index.js';

/** Words whose value changes from block to block without a transaction touching the contract. */
export const CONTEXT_READS: ReadonlySet<string> = new Set([
  'block-height',
  'stacks-block-height',
  'tenure-height',
  'burn-block-height',
  'stx-get-balance',
  'stx-account',
  'stx-liquid-supply',
  'get-block-info?',
  'get-stacks-block-info?',
  'get-tenure-info?',
  'get-burn-block-info?',
  'at-block',
  // Clarity 4: the time of the current block, and the hash of any contract (a deploy sets it).
  'stacks-block-time',
  'contract-hash?',
]);

/** A literal `contract-call?`: the callee's contract id and the function named. */
export interface ExternalCall {
  readonly contractId: string;
  readonly functionName: string;
}

export interface LocalFunction {
  readonly name: string;
  readonly kind: 'public' | 'read-only' | 'private' | 'top-level';
  readonly external: readonly ExternalCall[];
  /** Functions of the same contract it calls. */
  readonly internal: readonly string[];
  readonly readsContext: boolean;
  /** Calls a contract it cannot name statically (a trait, a computed principal). */
  readonly dynamicCall: boolean;
}

export interface ContractAnalysis {
  readonly contractId: string;
  /** Keyed by function name; the deployment's top-level code is under TOP_LEVEL. */
  readonly functions: ReadonlyMap<string, LocalFunction>;
}

/** The name of the deployment's own code (constants, initial values, top-level expressions). */
export const TOP_LEVEL = '';

const FUNCTION_DEFINERS: Record<string, LocalFunction['kind']> = {
  'define-public': 'public',
  'define-read-only': 'read-only',
  'define-private': 'private',
};

/** Analyses a contract's source; throws ClaritySyntaxError when it cannot be read. */
export function analyzeContract(contractId: string, source: string): ContractAnalysis {
  const deployer = contractId.split('.')[0]!;
  const forms = readClarity(source);
  const names = new Set<string>();
  for (const form of forms) {
    const def = functionDefinition(form);
    if (def !== undefined) names.add(def.name);
  }
  const functions = new Map<string, LocalFunction>();
  const topLevel: SExpr[] = [];
  for (const form of forms) {
    const def = functionDefinition(form);
    if (def === undefined) {
      topLevel.push(form);
      continue;
    }
    functions.set(def.name, walk(def.name, def.kind, def.body, names, deployer));
  }
  functions.set(TOP_LEVEL, walk(TOP_LEVEL, 'top-level', topLevel, names, deployer));
  return { contractId, functions };
}

function functionDefinition(
  form: SExpr,
): { name: string; kind: LocalFunction['kind']; body: readonly SExpr[] } | undefined {
  if (form.kind !== 'list') return undefined;
  const [head, signature, ...body] = form.items;
  if (head?.kind !== 'atom') return undefined;
  const kind = FUNCTION_DEFINERS[head.name];
  if (kind === undefined || signature?.kind !== 'list') return undefined;
  const name = signature.items[0];
  if (name?.kind !== 'atom') return undefined;
  return { name: name.name, kind, body };
}

function walk(
  name: string,
  kind: LocalFunction['kind'],
  body: readonly SExpr[],
  ownFunctions: ReadonlySet<string>,
  deployer: string,
): LocalFunction {
  const external: ExternalCall[] = [];
  const internal = new Set<string>();
  let readsContext = false;
  let dynamicCall = false;
  const visit = (e: SExpr): void => {
    switch (e.kind) {
      case 'atom':
        if (CONTEXT_READS.has(e.name)) readsContext = true;
        // A function of its own named anywhere is a call of it: at the head of a list, and as
        // a value handed to `map`, `fold` or `filter`, which call it. Clarity forbids
        // shadowing a defined name, so the name can mean nothing else.
        else if (ownFunctions.has(e.name) && e.name !== name) internal.add(e.name);
        return;
      case 'tuple':
        for (const entry of e.entries) visit(entry.value);
        return;
      case 'list': {
        const [head, target, fn] = e.items;
        if (head?.kind === 'atom') {
          if (head.name === 'contract-call?') {
            if (target?.kind === 'principal' && target.contract !== undefined && fn?.kind === 'atom') {
              external.push({
                contractId: `${target.address ?? deployer}.${target.contract}`,
                functionName: fn.name,
              });
            } else dynamicCall = true;
          }
        }
        for (const item of e.items) visit(item);
        return;
      }
      default:
        return;
    }
  };
  for (const e of body) visit(e);
  return { name, kind, external, internal: [...internal], readsContext, dynamicCall };
}

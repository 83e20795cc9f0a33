/**
 * The `cause` strings a Stacks node puts in `{"okay": false, "cause": ...}`.
 *
 * A node formats the Clarity VM error with `to_string()`: check errors print their Rust
 * Debug form wrapped in `RuntimeCheck(...)` (older nodes: `Unchecked(...)`), runtime errors
 * print the bare error kind followed by a stack trace (`ArithmeticUnderflow\n Stack Trace: \n
 * ...`). Simnet runs the same VM but reports failures as thrown strings such as
 * `Call contract function error: <id>::<fn>(<args>) -> Error calling contract function
 * '<fn>': Runtime error while interpreting <id>: RuntimeCheck(IncorrectArgumentCount(2, 1))`;
 * nodeCauseFromSimnetError recovers the node's wording from them.
 */

/** Rust's Debug rendering of a &str: quoted, with quotes and backslashes escaped. */
function debugStr(value: string): string {
  return JSON.stringify(value);
}

export const causes = {
  noSuchContract: (contractId: string) => `RuntimeCheck(NoSuchContract(${debugStr(contractId)}))`,
  undefinedFunction: (fn: string) => `RuntimeCheck(UndefinedFunction(${debugStr(fn)}))`,
  noSuchPublicFunction: (contractId: string, fn: string) =>
    `RuntimeCheck(NoSuchPublicFunction(${debugStr(contractId)}, ${debugStr(fn)}))`,
  incorrectArgumentCount: (expected: number, got: number) =>
    `RuntimeCheck(IncorrectArgumentCount(${expected}, ${got}))`,
  /** A public function that tried to write during a read-only call. */
  notReadOnly: 'NotReadOnly',
} as const;

/** Splits `a, b(c, d), "e, f"` at its top-level commas. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let inString = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '(' || ch === '[' || ch === '{') depth++;
    else if (ch === ')' || ch === ']' || ch === '}') depth--;
    else if (ch === ',' && depth === 0) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts;
}

/**
 * `Runtime(ArithmeticUnderflow, Some([FunctionIdentifier { identifier: "a" }, ...]))` is the
 * Debug form of a runtime error; a node displays it as the kind plus its stack trace.
 */
function displayRuntimeError(debug: string): string {
  const inner = debug.slice('Runtime('.length, -1);
  const [kind = inner, stack = 'None'] = splitTopLevel(inner);
  const frames = [...stack.matchAll(/identifier: "((?:[^"\\]|\\.)*)"/g)].map((m) => m[1] ?? '');
  if (frames.length === 0) return kind;
  return `${kind}\n Stack Trace: \n${frames.map((f) => `${f}\n`).join('')}`;
}

const INTERPRETING = 'Runtime error while interpreting ';

/** The cause a node would report for a simnet failure (the message of the thrown value). */
export function nodeCauseFromSimnetError(error: unknown): string {
  const message = (
    typeof error === 'string' ? error : error instanceof Error ? error.message : String(error)
  ).trim();
  // The VM error comes last; the call's rendered arguments (user data) come before it.
  const at = message.lastIndexOf(INTERPRETING);
  if (at >= 0) {
    const rest = message.slice(at + INTERPRETING.length);
    const colon = rest.indexOf(': ');
    const vmError = colon >= 0 ? rest.slice(colon + 2).trim() : rest.trim();
    if (vmError.startsWith('Runtime(') && vmError.endsWith(')')) return displayRuntimeError(vmError);
    return vmError;
  }
  const tail = message.slice(message.lastIndexOf(' -> ') + 1);
  const missingContract = /Contract '([^']+)' does not exist/.exec(tail);
  if (missingContract?.[1]) return causes.noSuchContract(missingContract[1]);
  const missingMethod = /Method '([^']+)' does not exist/.exec(tail);
  if (missingMethod?.[1]) return causes.undefinedFunction(missingMethod[1]);
  return message;
}

/** True for failures that mean the wasm VM itself is broken (a Rust panic), not a Clarity error. */
export function isVmPanic(error: unknown): boolean {
  const message = typeof error === 'string' ? error : error instanceof Error ? error.message : '';
  return (
    (error instanceof Error && error.name === 'RuntimeError') ||
    message === 'unreachable' ||
    message.includes('recursive use of an object detected')
  );
}

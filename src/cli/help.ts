/**
 * The command line's help texts: `clarity-cache --help`, and `clarity-cache serve --help`,
 * whose configuration table comes from the one declaration of the gateway's variables
 * (src/config/docs.ts). This file is the one place either text comes from.
 *
 * Every line of the Examples section is a complete command that, with `npm run demo` running
 * on its default ports, exits 0 and prints JSON (`serve` starts a gateway that answers
 * /health; `watch` prints JSON lines until Ctrl-C, which ends it with 0);
 * test/cli/help-examples.test.ts runs each one.
 */
import { renderConfigHelp } from '../config/docs.js';

/** The demo's deployer (src/devnet/accounts.ts): its contracts are there whenever the demo runs. */
const DEPLOYER = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';
const WALLET_1 = 'ST1SJ3DTE5DN7X54YDH5D64R3BCB6A2AG2ZQ8YPD5';

export const EXAMPLES: readonly string[] = [
  'clarity-cache serve',
  'clarity-cache known',
  `clarity-cache abi ${DEPLOYER}.demo-token`,
  `clarity-cache call ${DEPLOYER}.demo-token get-balance "'${WALLET_1}"`,
  `clarity-cache call ${DEPLOYER}.demo-token get-name --raw`,
  `clarity-cache call ${DEPLOYER}.demo-dao get-proposal u1`,
  `clarity-cache call ${DEPLOYER}.demo-dao preview-proposal '"Docs"' 'u"Écrire la doc"' -5 '(list "docs" "ops")' 0x0102 none --sender ${WALLET_1}`,
  'clarity-cache decode 0x0d0000000568656c6c6f',
  `clarity-cache watch ${DEPLOYER}.demo-token get-balance "'${WALLET_1}"`,
  `clarity-cache call ${DEPLOYER}.demo-token get-total-supply --url http://localhost:3000`,
  `CLARITY_CACHE_URL=http://localhost:3000 clarity-cache call ${DEPLOYER}.demo-nft get-owner u1 --fresh`,
];

export const HELP = `clarity-cache: the clarity-cache gateway, and a command line for it

Usage:
  clarity-cache serve [--port N] [--host H]       start the gateway (configured by environment variables;
                                                  clarity-cache serve --help lists them)
  clarity-cache call <addr.name> <function> [args...]   call a read-only function
  clarity-cache watch <addr.name> <function> [args...]  print the call's value, then its value at
                                                  each block that changes it, until Ctrl-C
  clarity-cache abi <addr.name>                   print a contract's ABI
  clarity-cache known                             list the contracts whose ABI the gateway holds
  clarity-cache decode <hex>                      decode a serialized Clarity value
  clarity-cache usage [--key NAME] [--from DAY] [--to DAY] [--group-by DIM[,DIM]] [--json|--csv]
                                                  usage per key, day, route, function, outcome:
                                                  every key's with $ADMIN_TOKEN, else the own
                                                  usage of the key in $CLARITY_CACHE_API_KEY
  clarity-cache --version                         print the version

Options (anywhere on the line):
  --url URL       the gateway's base URL (default: $CLARITY_CACHE_URL, else http://localhost:3000);
                  a path is kept (https://example.org/cache/), a query or a fragment is refused;
                  credentials in it (https://user:password@host/) are sent as HTTP Basic
                  authentication and never printed
  --raw           print the whole response envelope instead of its data (watch: each whole event)
  --sender ADDR   call, watch: the sender address of the call
  --network NET   call, watch: mainnet or testnet (default: from the contract address)
  --fresh         call: bypass the cache (cacheControl.bustCache)
  --key NAME      usage: this key's rows only (needs ADMIN_TOKEN; - for anonymous requests)
  --from DAY, --to DAY
                  usage: the first and last UTC day (YYYY-MM-DD), inclusive (default: the
                  gateway's retention period up to today)
  --group-by DIMS usage: comma-separated among key, day, route, function, outcome (default
                  key,day); rows are sorted by them in that order
  --json          usage: the answer's data as JSON instead of a table
  --csv           usage: the gateway's CSV (RFC 4180, the anonymous key as an empty field)
  --help, -h      this text
  --version       the version alone

Arguments of call and watch are Clarity literals, checked against the function's ABI:
  u100  -5  true  'SP…  'SP….name  "text"  u"text"  0x0102  none  (some u1)
  (ok u1)  (err u1)  (list u1 u2)  {a: u1, b: "x"}
Arguments are counted from 1. A literal that is not valid, or out of its type's range, is
refused before any request, naming the argument and the position in it.
Quote each argument for your shell: '"text"', "'SP….name", '{a: u1}'.

Output: the decoded JSON on stdout. On an error, its code and message on stderr, and the
exit status is 2 for a wrong command line (found before any request), else 1.
watch prints one JSON line per change, {"tipHeight", "indexBlockHash", "value"} (or "error"
instead of "value" when the call failed at that block); it reconnects by itself, saying so on
stderr, and Ctrl-C ends it with exit status 0.
usage prints a table: the group fields, then requests, units, upstreamRequests and bytesSent,
and a total line; the anonymous key is shown as (anonymous). It sends ADMIN_TOKEN as
Authorization: Bearer (GET /admin/usage), else CLARITY_CACHE_API_KEY as X-API-Key (GET /usage);
without either, or with --key and only a key, it is a usage error.

Examples (each runs as written against \`npm run demo\`):
${EXAMPLES.map((line) => `  ${line}`).join('\n')}
`;

/** `clarity-cache serve --help`: the gateway's whole configuration, from the one declaration of its variables. */
export function serveHelp(): string {
  return `clarity-cache serve [--port N] [--host H]: start the gateway\n\n${renderConfigHelp()}\n`;
}

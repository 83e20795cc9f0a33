/** The command line's --help text. */
export const HELP = `clarity-cache: the clarity-cache gateway, and a command line for it

Usage:
  clarity-cache serve [--port N] [--host H]       start the gateway (configured by environment variables)
  clarity-cache call <addr.name> <function> [args...]   call a read-only function
  clarity-cache abi <addr.name>                   print a contract's ABI
  clarity-cache known                             list the contracts whose ABI the gateway holds
  clarity-cache decode <hex>                      decode a serialized Clarity value

Options (anywhere on the line):
  --url URL       the gateway (default: $CLARITY_CACHE_URL, else http://localhost:3000)
  --raw           print the whole response envelope instead of its data
  --sender ADDR   call: the sender address of the call
  --network NET   call: mainnet or testnet (default: from the contract address)
  --fresh         call: bypass the cache (cacheControl.bustCache)
  --version       print the version and exit
  --help, -h      this text (\`clarity-cache serve --help\`: every configuration variable)

Arguments of call are Clarity literals, checked against the function's ABI:
  u100  -5  true  'SP…  'SP….name  "text"  u"text"  0x0102  none  (some u1)
  (ok u1)  (err u1)  (list u1 u2)  {a: u1, b: "x"}
A literal that is not valid is refused before any request, naming its position.
Quote each argument for your shell: '"text"', "'SP….name", '{a: u1}'.

Output: the decoded JSON on stdout. On an error, its code and message on stderr, and the
exit status is 1 (the gateway or the network answered with an error) or 2 (bad command line).

Examples: (each runs as it is against \`npm run demo\`)
  clarity-cache known
  clarity-cache abi ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.demo-token
  clarity-cache call ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.demo-token get-balance "'ST1SJ3DTE5DN7X54YDH5D64R3BCB6A2AG2ZQ8YPD5"
  clarity-cache call ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.demo-dao get-proposal u1 --raw
  clarity-cache call ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.demo-token get-name --fresh
  clarity-cache decode 0x0d0000000568656c6c6f
  clarity-cache serve --port 3100
`;

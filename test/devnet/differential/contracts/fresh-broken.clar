;; Deployed mid-run: its top-level code writes the registry, then aborts (minting 0 is an err,
;; unwrapped): the deployment fails and the write rolls back.
(define-data-var x uint u0)

(begin
  (unwrap-panic (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-registry record tx-sender u5))
  (unwrap-panic (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-token mint u0 tx-sender)))

(define-read-only (get-x) (var-get x))

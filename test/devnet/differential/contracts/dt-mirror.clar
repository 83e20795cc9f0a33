;; Deployed by wallet_1: every principal of the deployer's contracts is written in full.
(define-data-var mirrored uint u0)

(define-private (entry-step (who principal))
  (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-registry get-entry who))

(define-public (copy-counter)
  (begin
    (var-set mirrored (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-registry get-counter))
    (ok (var-get mirrored))))

(define-public (tick-twice)
  (begin
    (unwrap-panic (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-ledger tick))
    (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-ledger tick)))

(define-read-only (get-mirrored) (var-get mirrored))
(define-read-only (live-counter) (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-registry get-counter))
(define-read-only (entries (keys (list 5 principal))) (map entry-step keys))

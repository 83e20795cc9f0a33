;; Deployed mid-run by any wallet: its top-level code writes the ledger and the registry only
;; from a helper passed to map (no literal call of the top-level code reaches either), and
;; mints tokens through a literal call.
(define-data-var total uint u0)

(define-private (note-one (x uint))
  (unwrap-panic (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-ledger note x)))

(begin
  (var-set total (fold + (map note-one (list u7 u8)) u0))
  (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-token mint u5 tx-sender))

(define-read-only (get-total) (var-get total))
(define-read-only (notes-seen) (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-ledger get-notes))

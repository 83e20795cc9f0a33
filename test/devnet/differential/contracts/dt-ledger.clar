;; Writes the registry through a literal contract-call?, prints nothing.
(define-data-var notes uint u0)

(define-public (note (v uint))
  (begin
    (var-set notes (+ (var-get notes) u1))
    (contract-call? .dt-registry record tx-sender v)))

(define-public (tick)
  (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-registry bump))

(define-read-only (get-notes)
  (var-get notes))

(define-read-only (registry-counter)
  (contract-call? .dt-registry get-counter))

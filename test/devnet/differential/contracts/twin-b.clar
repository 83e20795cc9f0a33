;; The second deployment of a twin name (after twin-a.clar failed under it): here peek reads
;; the registry.
(define-data-var n uint u0)

(define-read-only (peek) (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-registry get-counter))

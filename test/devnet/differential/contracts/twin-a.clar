;; The first deployment of a twin name: its top-level code aborts, so the deployment fails and
;; the name stays free; twin-b.clar is deployed under the same name later, and succeeds. Here
;; peek reads only this contract.
(define-data-var n uint u0)

(define-read-only (peek) (var-get n))

(unwrap-panic (element-at? (list u1) u5))

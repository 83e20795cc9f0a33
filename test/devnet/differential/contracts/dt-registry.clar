;; Plain state, written by the ledger and the vault through nested contract-call?: no print,
;; no token, so no event of a block ever names this contract.
(define-data-var counter uint u0)
(define-data-var last-writer principal tx-sender)
(define-map entries principal uint)

(define-public (record (key principal) (v uint))
  (begin
    (asserts! (< v u1000) (err u3))
    (map-set entries key v)
    (var-set last-writer tx-sender)
    (ok v)))

(define-public (bump)
  (begin
    (var-set counter (+ (var-get counter) u1))
    (ok (var-get counter))))

(define-read-only (get-entry (key principal))
  (default-to u0 (map-get? entries key)))

(define-read-only (get-counter)
  (var-get counter))

(define-read-only (get-last-writer)
  (var-get last-writer))

;; Depends on the caller: read with two senders.
(define-read-only (get-mine)
  (default-to u0 (map-get? entries tx-sender)))

;; The vault: its public functions write other contracts' state through nested literal
;; contract-call? (vault -> ledger -> registry), some only from helpers passed by name to
;; map, fold and filter; it holds STX and pays them out from contract code; some calls fail
;; after writing, so their writes roll back; pay-via calls whatever token it is given (a
;; trait: Clarity refuses trait calls in read-only functions, so only a transaction can).
;; Nothing here prints.
(use-trait ft 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-trait.dt-ft-trait)

(define-data-var deposits uint u0)
(define-map deposited principal uint)

;; Helpers passed by name (never called with their name at the head of a list).
(define-private (bump-one (x uint))
  (unwrap-panic (contract-call? .dt-registry bump)))
(define-private (note-step (x uint) (acc uint))
  (+ acc (unwrap-panic (contract-call? .dt-ledger note x))))
(define-private (mint-ok (x uint))
  (is-ok (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-token mint x tx-sender)))
(define-private (entry-of (who principal))
  (contract-call? .dt-registry get-entry who))
(define-private (add-entry (who principal) (acc uint))
  (+ acc (contract-call? .dt-registry get-entry who)))
(define-private (counter-above (x uint))
  (> (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-registry get-counter) x))
(define-private (is-rich (who principal))
  (> (stx-get-balance who) u100000000000000))
(define-private (at-height (x uint))
  (+ x stacks-block-height))

(define-public (deposit (amount uint))
  (begin
    (try! (stx-transfer? amount tx-sender (as-contract tx-sender)))
    (var-set deposits (+ (var-get deposits) amount))
    (map-set deposited tx-sender (+ amount (default-to u0 (map-get? deposited tx-sender))))
    (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-ledger note (mod amount u1000))))

(define-public (withdraw (amount uint))
  (let ((who tx-sender) (held (default-to u0 (map-get? deposited tx-sender))))
    (asserts! (<= amount held) (err u10))
    (map-set deposited who (- held amount))
    (var-set deposits (- (var-get deposits) amount))
    (as-contract (stx-transfer? amount tx-sender who))))

(define-public (bump-many (xs (list 5 uint)))
  (ok (map bump-one xs)))

(define-public (note-all (xs (list 5 uint)))
  (ok (fold note-step xs u0)))

(define-public (mint-some (xs (list 5 uint)))
  (ok (len (filter mint-ok xs))))

(define-public (record-then-fail (v uint))
  (begin
    (try! (contract-call? .dt-registry record tx-sender v))
    (err u9)))

(define-public (record-then-abort (v uint))
  (begin
    (try! (contract-call? .dt-registry record tx-sender v))
    (ok (unwrap-panic (element-at? (list v) u3)))))

(define-public (pay-via (t <ft>) (amount uint) (to principal))
  (contract-call? t transfer amount tx-sender to))

(define-read-only (get-deposits)
  (var-get deposits))

(define-read-only (deposited-by (who principal))
  (default-to u0 (map-get? deposited who)))

(define-read-only (sum-entries (keys (list 5 principal)))
  (fold add-entry keys u0))

(define-read-only (entries-of (keys (list 5 principal)))
  (map entry-of keys))

(define-read-only (counters-above (xs (list 5 uint)))
  (filter counter-above xs))

(define-read-only (rich (keys (list 5 principal)))
  (filter is-rich keys))

(define-read-only (heights (xs (list 5 uint)))
  (map at-height xs))

(define-read-only (vault-stx)
  (stx-get-balance (as-contract tx-sender)))

(define-read-only (ledger-notes)
  (contract-call? .dt-ledger get-notes))

;; Only its own var: the comment and the string look like code but are not.
;; (contract-call? .dt-registry get-counter) stacks-block-height (stx-get-balance tx-sender)
(define-read-only (quiet)
  (concat "(stacks-block-height) (contract-call? .dt-registry bump) stx-get-balance"
    (if (> (var-get deposits) u0) "+" "-")))

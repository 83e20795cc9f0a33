;; Reads of the chain's context: every one changes without any transaction naming this
;; contract.
(define-private (inner-height) stacks-block-height)

(define-read-only (height) stacks-block-height)
(define-read-only (burn-height) burn-block-height)
(define-read-only (tenure) tenure-height)
(define-read-only (balance-of (who principal)) (stx-get-balance who))
(define-read-only (account-of (who principal)) (stx-account who))
(define-read-only (prev-block-id) (get-stacks-block-info? id-header-hash (- stacks-block-height u1)))
(define-read-only (prev-burn-hash) (get-burn-block-info? header-hash (- burn-block-height u1)))
(define-read-only (height-indirect) (+ (inner-height) u0))
(define-read-only (liquid) stx-liquid-supply)
;; A boot contract: its source is not served by the devnet.
(define-read-only (pox-cycle)
  (contract-call? 'ST000000000000000000002AMW42H.pox-4 current-pox-reward-cycle))

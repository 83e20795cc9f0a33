;; A fungible token anyone may mint. Deployed twice: as dt-token by the deployer and as
;; dt-token-b by wallet_1, so every principal in it is written in full.
;; Minting 0 is (err u1); minting more than 1,000,000 aborts at run time (its writes roll back).
(impl-trait 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-trait.dt-ft-trait)

(define-fungible-token dtt)
(define-data-var mint-count uint u0)
(define-map last-mint principal uint)

(define-private (abort-if (yes bool))
  (if yes (unwrap-panic (element-at? (list u0) u9)) u0))

(define-public (mint (amount uint) (to principal))
  (begin
    (asserts! (> amount u0) (err u1))
    (var-set mint-count (+ (var-get mint-count) u1))
    (map-set last-mint to amount)
    (abort-if (> amount u1000000))
    (ft-mint? dtt amount to)))

(define-public (transfer (amount uint) (from principal) (to principal))
  (begin
    (asserts! (or (is-eq tx-sender from) (is-eq contract-caller from)) (err u4))
    (ft-transfer? dtt amount from to)))

(define-public (burn (amount uint))
  (ft-burn? dtt amount tx-sender))

(define-read-only (get-balance (who principal))
  (ok (ft-get-balance dtt who)))

(define-read-only (get-total-supply)
  (ok (ft-get-supply dtt)))

(define-read-only (get-mint-count)
  (var-get mint-count))

(define-read-only (get-last-mint (who principal))
  (map-get? last-mint who))

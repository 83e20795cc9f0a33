;; demo-token: a SIP-010 fungible token for the clarity-cache devnet.
;; At deployment it mints an initial distribution to the devnet deployer, a few devnet
;; wallets and the demo-dao treasury, so that balances are non-zero from the first block.
(impl-trait .sip-010-trait-ft-standard.sip-010-trait)

(define-fungible-token demo-token)

(define-constant contract-owner tx-sender)
(define-constant err-owner-only (err u100))
(define-constant err-not-token-owner (err u101))
(define-constant err-invalid-amount (err u102))

(define-data-var token-uri (optional (string-utf8 256)) (some u"https://example.com/demo-token.json"))

;; SIP-010

(define-public (transfer (amount uint) (sender principal) (recipient principal) (memo (optional (buff 34))))
  (begin
    (asserts! (or (is-eq tx-sender sender) (is-eq contract-caller sender)) err-not-token-owner)
    (asserts! (> amount u0) err-invalid-amount)
    (try! (ft-transfer? demo-token amount sender recipient))
    (match memo to-print (print to-print) 0x)
    (ok true)
  )
)

(define-read-only (get-name)
  (ok "Demo Token")
)

(define-read-only (get-symbol)
  (ok "DEMO")
)

(define-read-only (get-decimals)
  (ok u6)
)

(define-read-only (get-balance (who principal))
  (ok (ft-get-balance demo-token who))
)

(define-read-only (get-total-supply)
  (ok (ft-get-supply demo-token))
)

(define-read-only (get-token-uri)
  (ok (var-get token-uri))
)

;; Owner-only extras

(define-public (mint (amount uint) (recipient principal))
  (begin
    (asserts! (is-eq tx-sender contract-owner) err-owner-only)
    (ft-mint? demo-token amount recipient)
  )
)

(define-public (set-token-uri (value (optional (string-utf8 256))))
  (begin
    (asserts! (is-eq tx-sender contract-owner) err-owner-only)
    (ok (var-set token-uri value))
  )
)

;; Initial distribution (6 decimals): 1,000,000 DEMO to the deployer, 500,000 to wallet_1,
;; 250,000 to wallet_2 and 100,000 to the demo-dao treasury.
(unwrap-panic (ft-mint? demo-token u1000000000000 contract-owner))
(unwrap-panic (ft-mint? demo-token u500000000000 'ST1SJ3DTE5DN7X54YDH5D64R3BCB6A2AG2ZQ8YPD5))
(unwrap-panic (ft-mint? demo-token u250000000000 'ST2CY5V39NHDPWSXMW9QDT3HC3GD6Q6XX4CFRK9AG))
(unwrap-panic (ft-mint? demo-token u100000000000 .demo-dao))

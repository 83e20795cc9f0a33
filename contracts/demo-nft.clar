;; demo-nft: a SIP-009 non-fungible token for the clarity-cache devnet.
;; Tokens 1 and 2 go to wallet_1 and token 3 to wallet_2 at deployment.
(impl-trait .nft-trait.nft-trait)

(define-non-fungible-token demo-nft uint)

(define-constant contract-owner tx-sender)
(define-constant err-owner-only (err u100))
(define-constant err-not-token-owner (err u101))

(define-data-var last-token-id uint u0)

;; SIP-009

(define-read-only (get-last-token-id)
  (ok (var-get last-token-id))
)

(define-read-only (get-token-uri (token-id uint))
  (ok (some (concat (concat "https://example.com/demo-nft/" (int-to-ascii token-id)) ".json")))
)

(define-read-only (get-owner (token-id uint))
  (ok (nft-get-owner? demo-nft token-id))
)

(define-public (transfer (token-id uint) (sender principal) (recipient principal))
  (begin
    (asserts! (is-eq tx-sender sender) err-not-token-owner)
    (nft-transfer? demo-nft token-id sender recipient)
  )
)

;; Owner-only extras

(define-public (mint (recipient principal))
  (let ((token-id (+ (var-get last-token-id) u1)))
    (asserts! (is-eq tx-sender contract-owner) err-owner-only)
    (try! (nft-mint? demo-nft token-id recipient))
    (var-set last-token-id token-id)
    (ok token-id)
  )
)

(define-private (mint-at-deploy (recipient principal))
  (let ((token-id (+ (var-get last-token-id) u1)))
    (unwrap-panic (nft-mint? demo-nft token-id recipient))
    (var-set last-token-id token-id)
    token-id
  )
)

(mint-at-deploy 'ST1SJ3DTE5DN7X54YDH5D64R3BCB6A2AG2ZQ8YPD5)
(mint-at-deploy 'ST1SJ3DTE5DN7X54YDH5D64R3BCB6A2AG2ZQ8YPD5)
(mint-at-deploy 'ST2CY5V39NHDPWSXMW9QDT3HC3GD6Q6XX4CFRK9AG)

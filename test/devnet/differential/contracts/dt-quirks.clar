;; Source the dependency analysis must read as the VM does: strings holding quotes, backslashes
;; and comment-like or code-like text, utf8 escapes, tuples in braces, helpers of helpers passed
;; by name, and a contract of another deployer named in full. Each read below depends on
;; another contract in a way a misread would hide.
(define-private (entry-plus (x uint))
  (+ x (contract-call? .dt-registry get-entry tx-sender)))
(define-private (sum-entries-of (x uint))
  (fold + (map entry-plus (list x u1)) u0))

(define-read-only (escaped)
  (begin
    (concat "a \" ;; (" "\\")
    (contract-call? .dt-registry get-counter)))

(define-read-only (utf8-trap)
  (begin
    u"\u{1F600} ;; (contract-call? .dt-registry bump) \""
    (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-ledger get-notes)))

(define-read-only (braced)
  {counter: (contract-call? 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.dt-registry get-counter), notes: (contract-call? .dt-ledger get-notes)})

(define-read-only (two-deep (xs (list 3 uint)))
  (map sum-entries-of xs))

(define-read-only (token-b-mints)
  (contract-call? 'ST1SJ3DTE5DN7X54YDH5D64R3BCB6A2AG2ZQ8YPD5.dt-token-b get-mint-count))

;; Writes the ledger and the registry from a string-laden body.
(define-public (quirk-note (v uint))
  (begin
    (asserts! (not (is-eq "\"" "(contract-call? .dt-ledger note v)")) (err u1))
    (contract-call? .dt-ledger note v)))

;; The trait the vault dispatches through (a function taking a <dt-ft-trait> calls whatever
;; contract it is given: no analysis can name it).
(define-trait dt-ft-trait
  (
    (transfer (uint principal principal) (response bool uint))
    (get-balance (principal) (response uint uint))
  )
)

;; Clarity 4 (epoch 3.3): the block's time, and the hash of a contract deployed later.
(define-data-var set-at uint stacks-block-time)
(define-private (later (x uint)) (+ x stacks-block-time))

(define-read-only (now) stacks-block-time)
(define-read-only (times (xs (list 3 uint))) (map later xs))
(define-read-only (prev-time) (get-stacks-block-info? time (- stacks-block-height u1)))
(define-read-only (get-set-at) (var-get set-at))
;; dt-mirror is deployed after this contract: (err u2) until then, its code's hash after.
(define-read-only (mirror-hash)
  (contract-hash? 'ST1SJ3DTE5DN7X54YDH5D64R3BCB6A2AG2ZQ8YPD5.dt-mirror))

;; Clarity 4 (epoch 3.3): the block's time.
(define-data-var set-at uint stacks-block-time)
(define-private (later (x uint)) (+ x stacks-block-time))

(define-read-only (now) stacks-block-time)
(define-read-only (times (xs (list 3 uint))) (map later xs))
(define-read-only (prev-time) (get-stacks-block-info? time (- stacks-block-height u1)))
(define-read-only (get-set-at) (var-get set-at))

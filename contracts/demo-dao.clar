;; demo-dao: a small DAO-style contract for the clarity-cache devnet.
;; Its read-only functions return tuples holding optionals, lists, buffers, principals,
;; int and uint (including values beyond 2^53), string-ascii and string-utf8, so that every
;; decoding rule of the gateway meets a real chain. get-treasury-withdrawal returns (err ...)
;; while the treasury is locked (it is at deployment).

(define-constant deployer tx-sender)
(define-constant created-at stacks-block-height)
(define-constant charter-hash (sha256 (unwrap-panic (to-consensus-buff? "Demo DAO charter v1"))))
(define-constant err-bad-request (err u400))
(define-constant err-not-member (err u401))
(define-constant err-not-found (err u404))
(define-constant err-already-voted (err u409))

(define-data-var proposal-count uint u0)
(define-data-var proposal-ids (list 100 uint) (list))
(define-data-var treasury-locked bool true)

(define-map members principal { role: (string-ascii 16), joined-at: uint, weight: uint })

(define-map proposals uint {
  title: (string-ascii 64),
  description: (string-utf8 256),
  proposer: principal,
  votes-for: uint,
  votes-against: uint,
  delta: int,
  created-at: uint,
  closes-at: (optional uint),
  executed: bool,
  payload-hash: (buff 32),
  tags: (list 5 (string-ascii 16)),
  target: (optional principal)
})

(define-map votes { proposal-id: uint, voter: principal } { in-favor: bool, weight: uint })

;; Read-only functions

(define-read-only (get-dao-info)
  {
    name: "Demo DAO",
    motto: u"Gouvernance d\u{e9}centralis\u{e9}e \u{1F680}",
    treasury-cap: u340282366920938463463374607431768211455,
    min-delta: -170141183460469231731687303715884105728,
    quorum: u9007199254740993,
    proposal-count: (var-get proposal-count),
    last-proposal-id: (if (> (var-get proposal-count) u0) (some (var-get proposal-count)) none),
    treasury-locked: (var-get treasury-locked),
    founders: (list deployer 'ST1SJ3DTE5DN7X54YDH5D64R3BCB6A2AG2ZQ8YPD5 .demo-token),
    charter-hash: charter-hash,
    created-at: created-at,
    settings: { voting-period: u144, min-balance: (some u1000000), veto: none }
  }
)

(define-read-only (get-proposal (id uint))
  (map-get? proposals id)
)

(define-read-only (get-proposal-ids)
  (var-get proposal-ids)
)

(define-read-only (get-member (who principal))
  (ok (unwrap! (map-get? members who) err-not-found))
)

(define-read-only (is-member (who principal))
  (is-some (map-get? members who))
)

(define-read-only (get-vote (id uint) (voter principal))
  (map-get? votes { proposal-id: id, voter: voter })
)

(define-read-only (get-tally (id uint))
  (let ((proposal (unwrap! (map-get? proposals id) err-not-found)))
    (ok {
      for: (get votes-for proposal),
      against: (get votes-against proposal),
      net: (- (to-int (get votes-for proposal)) (to-int (get votes-against proposal)))
    })
  )
)

;; Always an (err ...) while the treasury is locked, which it is from deployment on.
(define-read-only (get-treasury-withdrawal (amount uint))
  (if (var-get treasury-locked)
    (err { code: u403, reason: "treasury is locked", unlock-height: (some (+ created-at u1000)) })
    (ok amount)
  )
)

;; The tuple `propose` would store, with tx-sender as proposer: takes one argument of most
;; Clarity types, so that argument validation and encoding meet a real contract.
(define-read-only (preview-proposal
    (title (string-ascii 64))
    (description (string-utf8 256))
    (delta int)
    (tags (list 5 (string-ascii 16)))
    (payload-hash (buff 32))
    (target (optional principal)))
  (begin
    (asserts! (> (len title) u0) err-bad-request)
    (ok (make-proposal title description tx-sender delta tags payload-hash target))
  )
)

;; Integer division: a runtime error (DivisionByZero) when parts is u0.
(define-read-only (get-share (amount uint) (parts uint))
  (/ amount parts)
)

;; Public functions

(define-public (propose
    (title (string-ascii 64))
    (description (string-utf8 256))
    (delta int)
    (tags (list 5 (string-ascii 16)))
    (payload-hash (buff 32))
    (target (optional principal)))
  (begin
    (asserts! (is-member tx-sender) err-not-member)
    (asserts! (> (len title) u0) err-bad-request)
    (ok (add-proposal (make-proposal title description tx-sender delta tags payload-hash target)))
  )
)

(define-public (vote (id uint) (in-favor bool))
  (let (
      (member (unwrap! (map-get? members tx-sender) err-not-member))
      (proposal (unwrap! (map-get? proposals id) err-not-found))
      (weight (get weight member))
    )
    (asserts! (is-none (get-vote id tx-sender)) err-already-voted)
    (map-set votes { proposal-id: id, voter: tx-sender } { in-favor: in-favor, weight: weight })
    (map-set proposals id
      (if in-favor
        (merge proposal { votes-for: (+ (get votes-for proposal) weight) })
        (merge proposal { votes-against: (+ (get votes-against proposal) weight) })))
    (ok true)
  )
)

(define-public (join)
  (begin
    (asserts! (not (is-member tx-sender)) err-already-voted)
    (ok (map-insert members tx-sender { role: "member", joined-at: stacks-block-height, weight: u1 }))
  )
)

(define-public (set-treasury-locked (locked bool))
  (begin
    (asserts! (is-eq tx-sender deployer) err-not-member)
    (ok (var-set treasury-locked locked))
  )
)

;; A public function that writes nothing: a node answers a read-only call to it.
(define-public (ping)
  (ok (var-get proposal-count))
)

;; Private helpers

(define-private (make-proposal
    (title (string-ascii 64))
    (description (string-utf8 256))
    (proposer principal)
    (delta int)
    (tags (list 5 (string-ascii 16)))
    (payload-hash (buff 32))
    (target (optional principal)))
  {
    title: title,
    description: description,
    proposer: proposer,
    votes-for: u0,
    votes-against: u0,
    delta: delta,
    created-at: stacks-block-height,
    closes-at: (some (+ stacks-block-height u144)),
    executed: false,
    payload-hash: payload-hash,
    tags: tags,
    target: target
  }
)

(define-private (add-proposal (proposal {
    title: (string-ascii 64),
    description: (string-utf8 256),
    proposer: principal,
    votes-for: uint,
    votes-against: uint,
    delta: int,
    created-at: uint,
    closes-at: (optional uint),
    executed: bool,
    payload-hash: (buff 32),
    tags: (list 5 (string-ascii 16)),
    target: (optional principal)
  }))
  (let ((id (+ (var-get proposal-count) u1)))
    (map-set proposals id proposal)
    (var-set proposal-count id)
    (var-set proposal-ids (unwrap-panic (as-max-len? (append (var-get proposal-ids) id) u100)))
    id
  )
)

;; State at deployment: three members, two proposals and two votes.

(map-set members deployer { role: "founder", joined-at: stacks-block-height, weight: u100 })
(map-set members 'ST1SJ3DTE5DN7X54YDH5D64R3BCB6A2AG2ZQ8YPD5 { role: "member", joined-at: stacks-block-height, weight: u10 })
(map-set members 'ST2CY5V39NHDPWSXMW9QDT3HC3GD6Q6XX4CFRK9AG { role: "member", joined-at: stacks-block-height, weight: u5 })

(add-proposal {
  title: "Fund the devnet faucet",
  description: u"Send 1\u{a0}000 STX to the faucet \u{2014} \u{1F4A7}",
  proposer: deployer,
  votes-for: u100,
  votes-against: u5,
  delta: -250,
  created-at: stacks-block-height,
  closes-at: (some (+ stacks-block-height u144)),
  executed: false,
  payload-hash: (sha256 0x01),
  tags: (list "treasury" "faucet"),
  target: (some 'STNHKEPYEPJ8ET55ZZ0M5A34J0R3N5FM2CMMMAZ6)
})
(map-set votes { proposal-id: u1, voter: deployer } { in-favor: true, weight: u100 })
(map-set votes { proposal-id: u1, voter: 'ST2CY5V39NHDPWSXMW9QDT3HC3GD6Q6XX4CFRK9AG } { in-favor: false, weight: u5 })

(add-proposal {
  title: "Adopt the charter",
  description: u"Ratify the charter",
  proposer: 'ST1SJ3DTE5DN7X54YDH5D64R3BCB6A2AG2ZQ8YPD5,
  votes-for: u0,
  votes-against: u0,
  delta: 170141183460469231731687303715884105727,
  created-at: stacks-block-height,
  closes-at: none,
  executed: true,
  payload-hash: charter-hash,
  tags: (list),
  target: none
})

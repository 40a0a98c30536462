// Package appliance assembles ldafwd's bump in the wire: two ports, a
// sender lane toward the measured segment and a receiver lane from it
// (package dataplane), and the control goroutine that turns their
// double-buffered synopses into reports. docs/architecture.md follows a
// frame through them.
//
// # Role
//
// One Appliance is sender for the direction that leaves through its
// segment port and receiver for the direction that arrives on it. Its
// controller
//
//   - moves the interval clock (multiples of Config.Interval since the Unix
//     epoch); the sender lane sees the change once per burst, emits the End
//     marker on the data queue right behind the last frame recorded in the
//     interval, and flips its synopses;
//   - encodes each closed sender copy (compact LDA per MEC, and RDA/LDS when
//     configured, behind a small payload header: timestamp uncertainty,
//     frame count, merged/partial flags) and hands the control frames to the
//     lane, which sends them paced on the same wire;
//   - feeds the control frames the receiver lane stripped to a
//     control.Receiver, clones each receiver copy off its double buffer,
//     pairs it with the reassembled sender interval and reports one line per
//     interval, direction and MEC (and per flow for the LDS) — once the next
//     interval is paired too, in interval order: packets reordered past an
//     End marker show in the next interval's synopses and are taken out of
//     the loss (crossing.go);
//   - bounds each flow line's mean and each crossing window by the spread
//     of the interval's delays: an assumed range (Config.Assumed) widened
//     to the bucket means its LDAs showed, not the far wider range the
//     compact encoding carries (Config.Bounds; delayrange.go);
//   - ships, with its synopses, its newest valid mean delay of the direction
//     it receives, and estimates from the peer's the offset of its clock
//     over the peer's, assuming both paths have the same mean delay
//     (clock.go).
//
// A lost LDA part is asked for again in-band (partfetch.go): the
// receiver requests it once a frame of a later interval shows it lost,
// and the sender answers with the bytes it shipped, in short paced
// frames that a congested queue still takes.
//
// # Parts of the control side
//
// The controller is a coordinator: its step calls parts that each own
// one job and their own state, handing each what it needs from the
// others; no part calls back into it.
//
//   - pairer (pairing.go, sample.go, stamps.go): estimates a paired
//     interval's lines from the sender's bundle, the receiver's copy and
//     the configuration — each class's LDA line (or its line from the End
//     markers' counts), RDA line and sample line, the LDS flow lines, a
//     failed interval's lines from its counts alone, the stamps' checks —
//     and returns them with what the other parts need of them (the
//     decodes, the sender's RDA and LDS for the repairs); it holds nothing
//     between intervals.
//   - shipper (shipper.go, budget.go): encodes each sender copy within
//     the control budget and holds every control frame until the inject
//     ring takes it, the copies spaced apart; the exchanges' bytes are
//     paid from its later budgets.
//   - answerer (answerer.go): the sender's side of the in-band
//     exchanges — what each shipped interval's requests may ask for, and
//     the paced replies.
//   - ledger (ledger.go): every line from the moment it is built until it
//     goes out — claimed once per interval, held while its interval waits
//     for the next one's evidence, released in interval order, each line
//     once — and the liveness check's place: the next interval it may
//     declare silent, and the hole the lines after it wait for.
//   - the receiver's side of the exchanges: a requester (requester.go)
//     numbers and sends the requests of a repairer (repair.go: the lost
//     packets' timestamps), a cellFetcher (fetch.go: more RDA cells) and
//     a partFetcher (partfetch.go: lost LDA parts); an ldsRepairer
//     (lds_repair.go) gathers what the LDS lines' repair needs. Each
//     returns what it got (repairEnd, cellPatch, partReply, ldsFix) and
//     the controller puts it in place.
//   - orderLog (counts.go): what the decided intervals showed of the
//     segment's order, which lets the End markers' counts alone stand
//     for a line's loss or not.
//   - halves (halves.go): the receiver copies and sender bundles waiting
//     for each other, and the copies that span a lost End marker.
//   - rxDrops (rxdrops.go): the frames the receiver's segment port
//     dropped, per receiver copy; the controller reads the port's
//     counter and hands it in.
//
// The controller pairs what halves holds (pair): it holds each line the
// pairer returns in the ledger, puts the decodes in the interval's
// evidence, adds the fetches' fields and the LDA lines' microbursts, and
// starts the repairs; it keeps the latest confidence range across
// intervals (confidenceRange). Deciding a waiting interval is the
// controller's own too (decide, crossing.go): each line's crossing
// correction is the interval's (heldInterval.checkCrossings, which reads
// and changes that interval's lines alone), then come the checks across
// lines and intervals (crossedInto; countProof and countsLoss in
// counts.go; classChanges). So is applying a repair to its lines
// (finishRepair, crossedInto, ldsRepairApply, microburst.go): a repair's
// change to a line is a linePatch (patch.go), which apply writes to the
// line and its estimate together. The ledger keeps, with each line until
// it goes out, the repair that made its mean exact and the one that
// timed its losses.
//
// # Configuration
//
// New applies Config.WithDefaults (every optional zero setting becomes
// what `ldafwd run` takes without its flag), then Config.Validate, then
// builds. service.Config.Appliance maps run's flags onto a Config.
//
// Every way an interval can go wrong ends as valid:false with a reason —
// a lost or forged control frame, a lost End marker, a merged copy (overrun,
// receiver started mid-interval), a sender restart, a stop — never as a
// number. The warm-up interval before the first End marker is reported
// invalid (ReasonWarmup). Given the last interval an earlier run reported
// (Config.LastReported), a restarted receiver first reports the intervals
// after it that ended before its start invalid with ReasonNotRunning, so a
// killed receiver's restart leaves no hole in the interval numbers; at
// stop the intervals the silent check has not reached yet are declared.
//
// On simulated time (Config.Clock and Config.Now from a SimClock) a driver
// runs the appliance instead of its goroutines: StartSimulated starts it
// without starting the workers, SimTurn runs one turn of every worker's
// loop (Worker.Turn), SimStep is one step of the control side (the driver
// calls it at the control ticker's cadence), and SimStop begins Stop's
// phases, which the following SimSteps advance until SimStopped. Package
// demo is such a driver: two appliances, a generator, an impaired
// segment and a sink on one goroutine, where a seed replays bit for bit.
//
// # Lifetimes and concurrency
//
// New builds everything (ports are the caller's: opened before, closed
// after). Start starts the workers and the controller; Stop(drain) moves the
// clock one interval ahead exactly once so the last interval is closed and
// shipped, waits until nothing has been pending for a short quiet period (a
// peer's last frames may be in flight), then stops the workers after they
// drain. Stop is the one stop path: any number of calls, from any
// goroutine, before or after Start. Its waits are messages to the
// controller goroutine (phases run between its steps), not shared flags.
// Reports are called on the controller goroutine. Workers and the
// controller share only atomics, SPSC rings and the double buffers' epoch
// protocol.
//
// With Config.QueuesA/QueuesB (run and demo --queues N) there are N lane
// pairs and N workers; the controller reads the lanes' copies through
// dataplane.MergedBuffer, so everything after the merge is as with one
// lane (queues.go; docs/protocol.md, "Several lanes").
//
// # Hazards
//
//   - The two appliances of a segment must be configured alike (interval,
//     MEC rules, synopsis sizes, key); the Hello's config hash makes a
//     mismatch fail every interval with a reason.
//   - Intervals are ≥ 10 ms: the controller drains copies every ms and two
//     End markers closer than that would overrun the peer's double buffer.
//   - Clocks must be synchronised; the compact encoding's delay bounds must
//     cover the real delays (clock offset included) or intervals fail.
package appliance

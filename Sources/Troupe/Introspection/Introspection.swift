extension ActorSystem {
    /// What a system measures about itself: sampled latency histograms, the stuck-handler
    /// watchdog, mailbox depths. Set in ``ActorSystem/Configuration/introspection``; read with
    /// ``ActorSystem/snapshot()``, ``SystemHooks/onStuckHandler(_:)`` and
    /// ``SystemHooks/onMessageTimed(_:)``.
    ///
    /// The defaults cost a few instructions per message (measured in the Performance article):
    /// one message in 1,024 is timed, and a watchdog on the timer thread looks at the workers
    /// every 250 ms.
    public struct Introspection: Sendable {
        /// One message in this many (per sending thread) has its time in the mailbox (from its
        /// send to its handler's start) and its handler's duration measured. Rounded up to a
        /// power of two, at most 1,048,576; 0 turns sampling off. With several systems in one
        /// process sampling, all sample at the smallest interval any of them asked for.
        public var samplingInterval: Int
        /// Keep the sampled histograms per actor too, not only per system: about 2.5 KiB per
        /// actor that handled a sampled message (allocated on its first one).
        public var perActorHistograms: Bool
        /// A handler (or a Swift job on a Troupe executor) that runs longer than this on a
        /// shared worker is reported: once through ``SystemHooks/onStuckHandler(_:)`` and a log
        /// warning with the actor, message type, worker and elapsed time, and counted in
        /// ``ActorSystem/stuckHandlerCount`` until it ends, when it is reported again. `nil`
        /// turns the watchdog off. Measured by sampling the workers every quarter of the
        /// threshold (between 10 ms and 1 s), so a report comes between the threshold and
        /// 1.25 times it, with the elapsed time rounded down to a sampling step. Dedicated
        /// threads (``ActorExecutor/dedicatedThread``) exist for handlers that block,
        /// and are not watched.
        public var stuckHandlerThreshold: Duration?
        /// Every actor counts the messages in its mailbox, so that snapshots show every depth
        /// (two more atomic operations per message). Otherwise only bounded mailboxes and
        /// actors spawned with ``SpawnOptions/tracksMailboxDepth`` count theirs.
        public var tracksMailboxDepths: Bool

        public init(
            samplingInterval: Int = 1024,
            perActorHistograms: Bool = false,
            stuckHandlerThreshold: Duration? = .seconds(1),
            tracksMailboxDepths: Bool = false
        ) {
            self.samplingInterval = samplingInterval
            self.perActorHistograms = perActorHistograms
            self.stuckHandlerThreshold = stuckHandlerThreshold
            self.tracksMailboxDepths = tracksMailboxDepths
        }

        /// Nothing measured: no sampling, no watchdog.
        public static var off: Introspection {
            Introspection(samplingInterval: 0, stuckHandlerThreshold: nil)
        }

        /// The interval as the allocator takes it (a power of two; 0: off). Traps on a value
        /// out of range, saying what to pass instead.
        var normalizedSamplingInterval: UInt32 {
            guard samplingInterval != 0 else { return 0 }
            guard samplingInterval > 0, samplingInterval <= 1 << 20 else {
                fatalError(
                    "Introspection.samplingInterval: \(samplingInterval) is out of range; pass 1...1_048_576 (one message in that many is timed) or 0 to turn sampling off"
                )
            }
            var interval: UInt32 = 1
            while Int(interval) < samplingInterval { interval <<= 1 }
            return interval
        }

        /// The watchdog's threshold in nanoseconds (nil: off). Traps on a threshold that is not
        /// positive.
        var watchdogThresholdNanoseconds: Int64? {
            guard let stuckHandlerThreshold else { return nil }
            guard stuckHandlerThreshold > .zero else {
                fatalError(
                    "Introspection.stuckHandlerThreshold: \(stuckHandlerThreshold) is not positive; pass a duration such as .seconds(1), or nil to turn the watchdog off"
                )
            }
            return stuckHandlerThreshold.nanoseconds
        }
    }
}

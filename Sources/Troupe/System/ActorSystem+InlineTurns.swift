internal import CTroupe

extension ActorSystem {
    /// Runs `body`, then runs on the calling thread, one turn each, the actors and Troupe
    /// executors that `body` made runnable, instead of handing them to the workers.
    ///
    /// For threads that feed actors from outside, such as an I/O event loop that decodes a
    /// request and tells an actor (or starts a task on ``taskExecutor``): waking an idle worker
    /// costs a futex call and a context switch, tens of microseconds on a small VM, more than a
    /// short handler. Inside the scope that hand-off is skipped: the message's turn runs here as
    /// soon as `body` returns, and what that turn makes runnable runs here too, up to
    /// `maximumTurns` turns in all. TroupeCluster runs each received invocation this way.
    ///
    /// ```swift
    /// // On an event loop, for each decoded request:
    /// system.runningTurnsHere { handler.tell(.request(decoded)) }
    /// ```
    ///
    /// What to expect:
    /// - Only a cell whose mailbox this thread found empty is run here (its scheduling right
    ///   is this thread's); one already queued or running on a worker stays there. Ordering and
    ///   one-at-a-time execution are exactly those of a worker's turn.
    /// - A turn that leaves messages behind hands its actor to the workers, as does everything
    ///   beyond `maximumTurns`, or captured when `body` throws: nothing waits for a later scope.
    /// - Handlers run on this thread for as long as they take: keep this for short handlers
    ///   (the thread's own work waits meanwhile). The stuck-handler watchdog and
    ///   ``snapshot()`` watch the workers only.
    /// - A blocking ask inside `body` first hands what the scope holds to the workers; one made
    ///   by a handler running here is refused with ``AskError/blockingOnWorkerThread``, as on
    ///   a worker. Dedicated-thread actors always run on their threads.
    /// - Inside another scope on the same thread, `body` just runs (the outer scope runs the
    ///   turns of its own system's actors). After the system has shut down, cells go where
    ///   they always would.
    ///
    /// On one of Troupe's worker threads `body` just runs: a worker already runs next what it
    /// makes runnable, without a wake-up.
    public func runningTurnsHere<Result>(maximumTurns: Int = 16, _ body: () throws -> Result) rethrows -> Result {
        requireValidUse(maximumTurns >= 0, "runningTurnsHere(maximumTurns:) needs 0 or more turns, got \(maximumTurns)")
        if CTroupe_current_worker() != nil || CTroupe_current_inline_turns() != nil { return try body() }
        return try InlineTurns.current.run(scheduler: scheduler, maximumTurns: maximumTurns, body)
    }
}

extension ActorSystem {
    /// A new serial executor on this system's workers, for a native Swift `actor` (see
    /// ``TroupeSerialExecutor``). Each call makes a new one; an actor keeps its own in a
    /// stored property and returns it from `unownedExecutor`. Any thread.
    public func makeSerialExecutor() -> TroupeSerialExecutor {
        TroupeSerialExecutor(system: self)
    }
}

extension ActorSystem {
    /// The system's task executor: tasks created with `Task(executorPreference:)` or run
    /// inside `withTaskExecutorPreference` run on the system's workers (see
    /// ``TroupeTaskExecutor``). The same object until shutdown finishes; a task that prefers
    /// it keeps it alive. Any thread.
    public var taskExecutor: TroupeTaskExecutor {
        taskExecutorSlot.withLock { slot in
            if let slot { return slot }
            let made = TroupeTaskExecutor(system: self, laneCount: workerCount)
            // After shutdown nobody would drop it again: hand it out without keeping it.
            if !schedulerHasTerminated { slot = made }
            return made
        }
    }
}

import ServiceLifecycle

extension ClusterSystem: Service {
    /// Runs until graceful shutdown or cancellation, then leaves the cluster (``shutdown()``).
    /// Put it in a `ServiceGroup` before the services that make remote calls, so that it leaves
    /// after them, and after it the actor system's service (which should stop last).
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}

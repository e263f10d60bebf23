import Testing
import Troupe

/// A `ManualDriver` keeps its system weakly (the system holds the driver): a driver used after
/// its system was released fails with a message instead of reading freed memory.
@Suite struct ManualDriverLifetimeTests {
    struct Echo: ActorDefinition {
        let seen: Recorded
        mutating func receive(_ message: Int, context: ActorContext<Int>) { seen.values.append(message) }
    }

    /// What the actor saw; read and written on the test's thread only (the driver runs turns on it).
    final class Recorded: @unchecked Sendable {  // one thread: the driver steps on the caller's
        var values: [Int] = []
    }

    @Test func aDriverRunsItsSystemsActorsOnTheCallingThread() async {
        let driver = ManualDriver()
        let system = ActorSystem(configuration: .init(name: "manual", manualDriver: driver))
        let seen = Recorded()
        let echo = system.spawn(Echo(seen: seen))
        echo.tell(1)
        echo.tell(2)
        driver.run(until: { seen.values.count == 2 }, what: "both messages")
        #expect(seen.values == [1, 2])
        await system.shutdown()
    }

    @Test func aDriverWhoseSystemWasReleasedFailsWithWhatToDo() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let driver = ManualDriver()
            do {
                let system = ActorSystem(configuration: .init(name: "released", manualDriver: driver))
                await system.shutdown()
            }
            _ = driver.step()
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("ActorSystem was released"), "stderr: \(text)")
    }
}

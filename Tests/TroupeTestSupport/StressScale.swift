#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Sizes of the stress tests, read from the environment so that CI and a developer's machine
/// run the same tests at different scales.
///
/// - `TROUPE_STRESS_MESSAGES`: total messages of the multi-producer FIFO/throughput test.
///   Default 10_000_000 (10^7; what the normal CI run uses). Raise it locally, e.g.
///   `TROUPE_STRESS_MESSAGES=100000000 swift test --filter TroupeStressTests` for 10^8.
/// - `TROUPE_STRESS_SCALE`: multiplier (a decimal number, default 1) for every other stress
///   size (churn rounds, shutdown-under-load traffic, ask storm) and for the FIFO test when
///   `TROUPE_STRESS_MESSAGES` is not set.
///
/// Under ThreadSanitizer (detected at run time: the TSan runtime is linked in), instrumented
/// code runs roughly 5-20x slower, so the defaults become a tenth (FIFO test: 10^6). Set the
/// variables explicitly to override; the TSan CI job runs
/// `TROUPE_STRESS_MESSAGES=1000000 swift test --sanitize=thread --filter TroupeStressTests`.
public enum StressScale {
    /// Whether this process runs under ThreadSanitizer.
    public static let isThreadSanitized: Bool = dlsym(nil, "__tsan_init") != nil

    /// `TROUPE_STRESS_SCALE`, or 1 (0.1 under TSan).
    public static let factor: Double = {
        if let raw = environment("TROUPE_STRESS_SCALE") {
            guard let value = Double(raw), value > 0 else {
                fatalError("TROUPE_STRESS_SCALE must be a positive number, got '\(raw)'")
            }
            return value
        }
        return isThreadSanitized ? 0.1 : 1
    }()

    /// Total messages of the FIFO/throughput stress test: `TROUPE_STRESS_MESSAGES`, or
    /// 10^7 x `factor`.
    public static let messages: Int = {
        if let raw = environment("TROUPE_STRESS_MESSAGES") {
            guard let value = Int(raw.filter { $0 != "_" }), value > 0 else {
                fatalError("TROUPE_STRESS_MESSAGES must be a positive integer, got '\(raw)'")
            }
            return value
        }
        return scaled(10_000_000)
    }()

    /// `base` x `factor`, at least `minimum`.
    public static func scaled(_ base: Int, minimum: Int = 1) -> Int {
        max(minimum, Int((Double(base) * factor).rounded()))
    }

    /// A generous timeout for waiting on stress traffic to drain: 2 minutes, x5 under TSan.
    public static var drainTimeout: Duration { isThreadSanitized ? .seconds(600) : .seconds(120) }

    /// A limit on waiting for a reply that only guards against a hang (a call or an ask whose
    /// answer the test then checks): `normal`, x12 under TSan. Beside the stress suites under
    /// TSan on 2 cores, 500 concurrent remote calls took over 10 s (CI, 2026-11-28); a limit a
    /// test does not measure must not assert the machine's speed.
    public static func hangGuard(_ normal: Duration) -> Duration { isThreadSanitized ? normal * 12 : normal }

    /// A human-readable summary for test output.
    public static var summary: String {
        "messages=\(messages) factor=\(factor) tsan=\(isThreadSanitized)"
    }

    private static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let string = String(cString: value)
        return string.isEmpty ? nil : string
    }
}

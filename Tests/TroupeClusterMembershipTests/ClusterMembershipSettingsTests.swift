import Testing
import TroupeClusterMembership

/// Out-of-range membership settings are named before anything runs on them: a zero probe
/// interval would probe without pause, and a negative count has no meaning.
@Suite struct ClusterMembershipSettingsTests {
    @Test func theDefaultsAndTheZerosThatTurnAFeatureOffAreValid() {
        #expect(ClusterMembershipSettings().problem == nil)
        var off = ClusterMembershipSettings()
        off.gossipFanOut = 0
        off.joinPushFanOut = 0
        off.suspicionConfirmations = 0
        off.maximumLocalHealthMultiplier = 0
        off.suspicionMaximumMultiplier = 1
        off.indirectProbes = 0
        off.downAfter = .zero
        off.maximumTombstones = 0
        #expect(off.problem == nil)
    }

    @Test(arguments: [
        "probeInterval", "pingTimeout", "suspicionTimeout", "gossipInterval", "downAfter",
        "suspicionMaximumMultiplier", "indirectProbes", "suspicionConfirmations", "maximumLocalHealthMultiplier",
        "gossipPerMessage", "gossipRepeats", "joinPushFanOut", "gossipFanOut", "gossipRounds", "maximumTombstones",
        "maximumRememberedDiscoveries",
    ])
    func eachOutOfRangeSettingIsNamed(_ name: String) throws {
        let problem = try #require(spoiled(name).problem)
        #expect(problem.hasPrefix("membership.\(name) is "), "\(problem)")
    }

    @Test func aStateMachineGivenOutOfRangeSettingsStopsWithTheProblem() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var settings = ClusterMembershipSettings()
            settings.probeInterval = .zero
            _ = SWIMStateMachine(myself: ClusterNode(host: "10.0.0.1", port: 7337, uid: 1), settings: settings, seed: 1)
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("membership.probeInterval is a length of time above zero"), "\(text)")
    }
}

/// The defaults with one setting, named, just out of its range.
private func spoiled(_ name: String) -> ClusterMembershipSettings {
    var settings = ClusterMembershipSettings()
    switch name {
    case "probeInterval": settings.probeInterval = .zero
    case "pingTimeout": settings.pingTimeout = .milliseconds(-1)
    case "suspicionTimeout": settings.suspicionTimeout = .zero
    case "gossipInterval": settings.gossipInterval = .zero
    case "downAfter": settings.downAfter = .seconds(-1)
    case "suspicionMaximumMultiplier": settings.suspicionMaximumMultiplier = 0
    case "indirectProbes": settings.indirectProbes = -1
    case "suspicionConfirmations": settings.suspicionConfirmations = -1
    case "maximumLocalHealthMultiplier": settings.maximumLocalHealthMultiplier = -1
    case "gossipPerMessage": settings.gossipPerMessage = -1
    case "gossipRepeats": settings.gossipRepeats = -1
    case "joinPushFanOut": settings.joinPushFanOut = -1
    case "gossipFanOut": settings.gossipFanOut = -1
    case "gossipRounds": settings.gossipRounds = -1
    case "maximumTombstones": settings.maximumTombstones = -1
    case "maximumRememberedDiscoveries": settings.maximumRememberedDiscoveries = -1
    default: Issue.record("no such setting: \(name)")
    }
    return settings
}

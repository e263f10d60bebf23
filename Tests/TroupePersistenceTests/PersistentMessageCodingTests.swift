import Foundation
import Testing

@testable import TroupePersistence

/// A durable actor's message travels as its command alone; the journal's answers never travel.
@Suite struct PersistentMessageCodingTests {
    enum Command: Codable, Sendable, Equatable { case deposit(Int) }

    @Test func aCommandEncodesAsItselfAndDecodesAsACommand() throws {
        let message = PersistentMessage<Command>.command(.deposit(7))
        let encoded = try JSONEncoder().encode(message)
        #expect(encoded == (try JSONEncoder().encode(Command.deposit(7))), "nothing around the command")
        let decoded = try JSONDecoder().decode(PersistentMessage<Command>.self, from: encoded)
        guard case .command(let command) = decoded.kind else {
            Issue.record("decoded as \(decoded.kind)")
            return
        }
        #expect(command == .deposit(7))
    }

    @Test func theJournalsAnswersRefuseToEncode() {
        let answer = PersistentMessage<Command>(kind: .admitted(incarnation: 1))
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(answer) }
    }
}

import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import troupe_observe

/// The bound on an `https://` observer's reply, on the handler that gathers it (the bytes
/// arrive decrypted, in any chunks): at the limit the reply is whole, a byte more fails the
/// exchange and closes the connection.
struct ReplyCollectorTests {
    func collect(_ chunks: [Int]) throws -> Result<[UInt8], any Error> {
        let channel = EmbeddedChannel()
        let done = channel.eventLoop.makePromise(of: [UInt8].self)
        try channel.pipeline.syncOperations.addHandler(ReplyCollector(done: done))
        for size in chunks {
            try channel.writeInbound(ByteBuffer(repeating: UInt8(ascii: "y"), count: size))
        }
        _ = try? channel.finish()
        let outcome = Mutex<Result<[UInt8], any Error>?>(nil)
        done.futureResult.whenComplete { result in outcome.withLock { $0 = result } }
        return try #require(outcome.withLock { $0 })
    }

    @Test func aReplyAtTheLimitIsWholeAndOneByteMoreFails() throws {
        let limit = ObserverEndpoint.maximumReply
        let whole = try collect([limit / 2, limit - limit / 2]).get()
        #expect(whole.count == limit)
        let over = try collect([limit, 1])
        guard case .failure(let error) = over, case .malformed(let reason) = error as? ObserverEndpoint.Failure else {
            Issue.record("expected a malformed reply, got \(over)")
            return
        }
        #expect(reason.contains("more than \(limit) bytes"))
    }
}

import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Testing
import Troupe
import TroupeObserver
import TroupeObserverTLS
import TroupeTestSupport

@testable import troupe_observe

// The certificates under Certificates/ were made for these tests only (openssl, P-256, valid
// ten years from 2026-11-29): ca.pem (its key was deleted), observer.pem and observer-key.pem
// (127.0.0.1 and localhost, signed by ca.pem), and other-key.pem (a key of no certificate).
private let certificates = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Certificates").path

/// TroupeObserver over TLS: the page and its API only in HTTPS, the token still required, and a
/// typed error for every certificate that cannot serve.
@Suite struct ObserverTLSTests {
    static let token = "observer-tls-test-token-0123456789"

    static func tls() throws -> ObserverTLS {
        try ObserverTLS(
            certificateChainFile: "\(certificates)/observer.pem", privateKeyFile: "\(certificates)/observer-key.pem")
    }

    @Test func thePageAndItsAPIAreServedOverTLSAndStillNeedTheToken() async throws {
        try await withTestSystem { system in
            let counter = system.spawn(Counter(), options: SpawnOptions(name: "over-tls"))
            #expect(try await counter.ask { .get($0) } == 0)
            let observer = try await system.serveObserver(ObserverSettings(token: Self.token, security: try Self.tls()))
            #expect(observer.url.hasPrefix("https://127.0.0.1:"))
            let client = try TLSClient()
            let state = try await client.get(port: observer.port, "/api/state?token=\(Self.token)&q=over-tls")
            #expect(state.hasPrefix("HTTP/1.1 200"), "\(state.prefix(200))")
            #expect(state.contains("\"name\":\"over-tls\""))
            let page = try await client.get(port: observer.port, "/?token=\(Self.token)")
            #expect(page.hasPrefix("HTTP/1.1 200") && page.contains("<!doctype html>"))
            let refused = try await client.get(port: observer.port, "/api/state")
            #expect(refused.hasPrefix("HTTP/1.1 401"))

            // Plain HTTP to the TLS port gets no HTTP answer: the handshake fails and it is closed.
            let plain = try RawSocket(port: observer.port)
            await plain.send("GET /api/state?token=\(Self.token) HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = await plain.read(within: .seconds(5)) { _ in false }
            #expect(!String(decoding: answer, as: UTF8.self).contains("HTTP/1.1 200"))
            #expect(await plain.closedByPeer(within: .seconds(5)))
            await observer.shutdown()
            try await client.shutdown()
        }
    }

    @Test func theTerminalViewReadsAnObserverOverTLSAndChecksItsCertificate() async throws {
        try await withTestSystem { system in
            let counter = system.spawn(Counter(), options: SpawnOptions(name: "seen-over-tls"))
            #expect(try await counter.ask { .get($0) } == 0)
            let observer = try await system.serveObserver(ObserverSettings(token: Self.token, security: try Self.tls()))
            let ca = "\(certificates)/ca.pem"
            // By IP address (the certificate names 127.0.0.1) and by name (localhost).
            for host in ["127.0.0.1", "localhost"] {
                let endpoint = try ObserverEndpoint(
                    url: "https://\(host):\(observer.port)/?token=\(Self.token)", caFile: ca)
                let state = try endpoint.state(TableView(sort: .name, search: "seen-over", rows: 5))
                let names = (state["actors"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
                #expect(names == ["seen-over-tls"], "over TLS to \(host)")
            }
            // The system's trust roots do not hold the tests' CA: refused, saying what to pass.
            let untrusted = try ObserverEndpoint(url: "https://127.0.0.1:\(observer.port)/?token=\(Self.token)")
            #expect {
                _ = try untrusted.state(TableView())
            } throws: { error in
                guard case .tls(let reason) = error as? ObserverEndpoint.Failure else { return false }
                return reason.contains("--ca-file")
            }
            // The right CA but a name the certificate does not hold.
            let misnamed = try ObserverEndpoint(
                url: "https://127.0.0.2:\(observer.port)/?token=\(Self.token)", caFile: ca)
            #expect(throws: ObserverEndpoint.Failure.self) { _ = try misnamed.state(TableView()) }
            // The token is still checked.
            let wrongToken = try ObserverEndpoint(url: "https://127.0.0.1:\(observer.port)/?token=wrong", caFile: ca)
            #expect {
                _ = try wrongToken.state(TableView())
            } throws: { error in
                guard case .refused(401, _) = error as? ObserverEndpoint.Failure else { return false }
                return true
            }
            await observer.shutdown()
        }
    }

    @Test func securityLetsTheObserverServeBeyondLoopback() async throws {
        try await withTestSystem { system in
            // Every interface, over TLS: no opt-in needed.
            let observer = try await system.serveObserver(ObserverSettings(host: "0.0.0.0", security: try Self.tls()))
            #expect(observer.url.hasPrefix("https://0.0.0.0:"))
            await observer.shutdown()
            await #expect(throws: ObserverError.remoteAccessNeedsOptIn(host: "0.0.0.0")) {
                _ = try await system.serveObserver(ObserverSettings(host: "0.0.0.0"))
            }
        }
    }

    @Test func certificatesThatCannotServeAreTypedErrors() throws {
        let key = try NIOSSLPrivateKey(file: "\(certificates)/observer-key.pem", format: .pem)
        #expect(throws: ObserverTLSError.noCertificate) { try ObserverTLS(certificateChain: [], privateKey: key) }
        do {
            _ = try ObserverTLS(
                certificateChainFile: "\(certificates)/missing.pem", privateKeyFile: "\(certificates)/observer-key.pem")
            Issue.record("a missing certificate file was accepted")
        } catch {
            guard case .cannotLoad(let what, let file, _) = error else {
                Issue.record("expected cannotLoad, got \(error)")
                return
            }
            #expect(what == "the certificate chain" && file.hasSuffix("missing.pem"))
        }
        do {
            _ = try ObserverTLS(
                certificateChainFile: "\(certificates)/observer.pem", privateKeyFile: "\(certificates)/other-key.pem")
            Issue.record("a key that is not the certificate's was accepted")
        } catch {
            guard case .unusable = error else {
                Issue.record("expected unusable, got \(error)")
                return
            }
            #expect(error.description.contains("cannot serve"))
        }
    }
}

/// One HTTP/1.1 request over TLS (trusting only the test CA), answered and closed.
private final class TLSClient: Sendable {
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let context: NIOSSLContext

    init() throws {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile("\(certificates)/ca.pem"))
        context = try NIOSSLContext(configuration: configuration)
    }

    /// The whole response to `GET target` (the request asks the server to close after it).
    func get(port: Int, _ target: String) async throws -> String {
        let received = group.next().makePromise(of: String.self)
        let channel = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        NIOSSLClientHandler(context: self.context, serverHostname: "localhost"))
                    try channel.pipeline.syncOperations.addHandler(Collector(done: received))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        var request = channel.allocator.buffer(capacity: 256)
        request.writeString("GET \(target) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        try await channel.writeAndFlush(request)
        return try await received.futureResult.get()
    }

    func shutdown() async throws { try await group.shutdownGracefully() }
}

/// Gathers what the server sends until it closes.
private final class Collector: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let done: EventLoopPromise<String>
    private var text = ""

    init(done: EventLoopPromise<String>) { self.done = done }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        text += String(buffer: unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) { done.succeed(text) }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A TLS close without close_notify after the answer is still an answer.
        if text.isEmpty { done.fail(error) } else { done.succeed(text) }
        context.close(promise: nil)
    }
}

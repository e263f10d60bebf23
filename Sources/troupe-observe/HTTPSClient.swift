#if canImport(NIOSSL)
    import NIOCore
    import NIOPosix
    import NIOSSL

    import Synchronization

    /// The requests of an `https://` observer, over swift-nio-ssl: one connection per request
    /// (the request asks the observer to close after it), the certificate checked against the
    /// system's trust roots or a CA file, and the name or IP address in the URL checked against
    /// the certificate. Blocks the calling thread (the terminal view's loop) for at most the
    /// timeout.
    final class HTTPSClient: Sendable {
        /// One event-loop thread for the process's life (the view makes a request a second).
        static let shared = HTTPSClient()
        private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        /// The TLS context of each trust-root choice, made once (loading roots is not free and
        /// the view asks every second).
        private let contexts = Mutex<[String?: NIOSSLContext]>([:])

        /// The bytes of the reply to `request`, sent to `host`:`port` over TLS.
        func exchange(
            host: String, port: Int, request: String, caFile: String?, timeout: TimeAmount = .seconds(5)
        ) throws(ObserverEndpoint.Failure) -> [UInt8] {
            let context = try self.context(caFile: caFile)
            // An IP address is checked against the certificate's IP addresses (and sent no SNI).
            let serverName: String? = Self.isIPAddress(host) ? nil : host
            let done = group.next().makePromise(of: [UInt8].self)
            do {
                let channel = try ClientBootstrap(group: group)
                    .connectTimeout(timeout)
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(
                                NIOSSLClientHandler(context: context, serverHostname: serverName))
                            try channel.pipeline.syncOperations.addHandler(ReplyCollector(done: done))
                        }
                    }
                    .connect(host: host, port: port).wait()
                let deadline = channel.eventLoop.scheduleTask(in: timeout) {
                    channel.pipeline.fireErrorCaught(
                        ObserverEndpoint.Failure.unreachable(
                            "no answer within \(timeout.nanoseconds / 1_000_000_000) s"))
                }
                defer { deadline.cancel() }
                channel.writeAndFlush(channel.allocator.buffer(string: request), promise: nil)
                return try done.futureResult.wait()
            } catch {
                // A connection that never came up leaves the promise to this thread.
                done.fail(error)
                throw Self.failure(error, host: host, port: port)
            }
        }

        /// The context trusting `caFile`'s certificates, or the system's.
        func context(caFile: String?) throws(ObserverEndpoint.Failure) -> NIOSSLContext {
            if let context = contexts.withLock({ $0[caFile] }) { return context }
            var configuration = TLSConfiguration.makeClientConfiguration()
            if let caFile { configuration.trustRoots = .file(caFile) }
            do {
                let context = try NIOSSLContext(configuration: configuration)
                contexts.withLock { $0[caFile] = context }
                return context
            } catch {
                throw .tls("the trust roots in \(caFile ?? "the system's store") could not be loaded: \(error)")
            }
        }

        /// What an error of the exchange means for the user.
        private static func failure(_ error: any Error, host: String, port: Int) -> ObserverEndpoint.Failure {
            switch error {
            case let failure as ObserverEndpoint.Failure: failure
            case let error as NIOSSLError:
                .tls(
                    "the TLS handshake with \(host):\(port) failed (\(error)): if the observer's certificate comes from a CA of your own, pass it with --ca-file"
                )
            case let error as NIOSSLExtraError:
                .tls("\(host):\(port) presented a certificate not valid for \(host) (\(error))")
            default: .unreachable("\(host):\(port): \(error)")
            }
        }

        private static func isIPAddress(_ host: String) -> Bool {
            (try? SocketAddress(ipAddress: host, port: 0)) != nil
        }
    }

    /// Gathers the reply until the observer closes, at most
    /// ``ObserverEndpoint/maximumReply`` bytes, and completes the promise once.
    final class ReplyCollector: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        private let done: EventLoopPromise<[UInt8]>
        private var reply: [UInt8] = []
        private var finished = false

        init(done: EventLoopPromise<[UInt8]>) { self.done = done }

        private func finish(_ result: Result<[UInt8], any Error>, context: ChannelHandlerContext) {
            guard !finished else { return }
            finished = true
            done.completeWith(result)
            context.close(promise: nil)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            guard reply.count + buffer.readableBytes <= ObserverEndpoint.maximumReply else {
                let failure = ObserverEndpoint.Failure.malformed(
                    "a reply of more than \(ObserverEndpoint.maximumReply) bytes")
                finish(.failure(failure), context: context)
                return
            }
            reply += buffer.readBytes(length: buffer.readableBytes) ?? []
        }

        func channelInactive(context: ChannelHandlerContext) {
            finish(.success(reply), context: context)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // The observer may close without TLS's close_notify once it has answered: the reply
            // is whole then.
            if case NIOSSLError.uncleanShutdown = error, !reply.isEmpty {
                finish(.success(reply), context: context)
            } else {
                finish(.failure(error), context: context)
            }
        }
    }
#endif

import NIOCore
import Synchronization
import NIOWebSocket

/// The pages connected over WebSocket, and the timer that sends them updates. The timer runs
/// only while at least one page is connected: with none, the observer reads nothing from the
/// system. Each tick takes one sample and sends each page what changed since the last document
/// that page got (``StateDocument/delta(from:)``; nothing when nothing did), and only when the
/// page's connection can take it (a page that stops reading is skipped, not buffered for). A
/// page's first document, and the first after it changes its view, is whole.
///
/// Thread-safety: used on the observer's event loop only (held in a `NIOLoopBound`).
final class LiveHub {
    private struct Page {
        let channel: Channel
        var view: ActorView
        /// The last document sent; nil: send the next one whole.
        var last: StateDocument?
        var lastSent: NIODeadline
    }

    let sampler: SystemSampler
    private let eventLoop: EventLoop
    private let interval: TimeAmount
    private var pages: [ObjectIdentifier: Page] = [:]
    private var ticker: RepeatedTask?
    let counters: ObserverCounters

    init(sampler: SystemSampler, eventLoop: EventLoop, interval: Duration, counters: ObserverCounters) {
        self.sampler = sampler
        self.counters = counters
        self.eventLoop = eventLoop
        self.interval = .nanoseconds(
            interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000)
    }

    /// A page connected: it gets a document at once, then updates.
    func add(_ channel: Channel, view: ActorView) {
        eventLoop.assertInEventLoop()
        pages[ObjectIdentifier(channel)] = Page(
            channel: channel, view: view, last: nil, lastSent: .uptimeNanoseconds(0))
        counters.connectedPages.store(pages.count, ordering: .relaxed)
        if ticker == nil {
            // The hub is reached again through a loop-bound box: the task runs on this loop.
            let hub = NIOLoopBound(self, eventLoop: eventLoop)
            ticker = eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
                hub.value.tick()
            }
        }
        send(to: [ObjectIdentifier(channel)], sample: takeSample())
    }

    /// A page's connection closed.
    func remove(_ channel: Channel) {
        eventLoop.assertInEventLoop()
        pages[ObjectIdentifier(channel)] = nil
        counters.connectedPages.store(pages.count, ordering: .relaxed)
        if pages.isEmpty {
            ticker?.cancel()
            ticker = nil
        }
    }

    /// A page asked for another view (a sort, a search): it gets it at once, unless it was
    /// sent a document less than 100 ms ago, when the next tick sends it.
    func change(_ channel: Channel, to view: ActorView) {
        eventLoop.assertInEventLoop()
        let key = ObjectIdentifier(channel)
        guard var page = pages[key], page.view != view else { return }
        page.view = view
        page.last = nil
        pages[key] = page
        if NIODeadline.now() - page.lastSent >= .milliseconds(100) { send(to: [key], sample: takeSample()) }
    }

    /// Stops the timer and closes every page's connection.
    func closeAll() {
        eventLoop.assertInEventLoop()
        ticker?.cancel()
        ticker = nil
        for page in pages.values { page.channel.close(promise: nil) }
        pages = [:]
        counters.connectedPages.store(0, ordering: .relaxed)
    }

    private func tick() {
        // A page that cannot take a document (a slow or stalled reader) gets none, so with no
        // writable page there is nothing to sample for.
        guard pages.values.contains(where: { $0.channel.isWritable }) else { return }
        send(to: Array(pages.keys), sample: takeSample())
    }

    private func takeSample() -> SystemSampler.Sample {
        counters.samplesTaken.add(1, ordering: .relaxed)
        return sampler.sample()
    }

    private func send(to keys: [ObjectIdentifier], sample: SystemSampler.Sample) {
        for key in keys {
            guard var page = pages[key], page.channel.isWritable else { continue }
            let document = sampler.document(sample, view: page.view)
            let text: String
            if let last = page.last {
                guard let delta = document.delta(from: last) else { continue }
                text = delta
            } else {
                text = document.text
            }
            page.last = document
            page.lastSent = .now()
            pages[key] = page
            counters.documentsSent.add(1, ordering: .relaxed)
            var buffer = page.channel.allocator.buffer(capacity: text.utf8.count)
            buffer.writeString(text)
            page.channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: buffer), promise: nil)
        }
    }
}

internal import TroupeLocks
import Synchronization
import Troupe

/// Multi-dispatch: forwards each call to every registered observer, instead of a global
/// notification with stringly keys. Observers conform to a protocol of `Void` methods; the
/// call is a closure over that protocol:
///
/// ```swift
/// protocol DownloadObserver: AnyObject, Sendable { func progress(_ fraction: Double) }
///
/// let observers = MultiDispatcher<any DownloadObserver>(target: .serialActor(in: system))
/// observers.add(progressBar)                      // held weakly: no remove needed on deinit
/// observers.dispatch { $0.progress(0.5) }         // asynchronous, on the target actor
/// observers.dispatchSynchronously { $0.progress(1) } // on this thread, before returning
/// ```
///
/// - Observers are held weakly: one that is deallocated simply stops receiving calls.
/// - `add` and `remove` are safe at any time, from any thread, also from inside an observer
///   while a dispatch runs: a dispatch iterates a snapshot taken without holding the lock
///   during calls. An observer removed during a dispatch is not called after `remove` returns
///   (unless that call had already begun). An asynchronous call reaches the observers
///   registered when it runs on the target.
///
/// `Observer` is a class type or a class-bound protocol's existential (`any P` with
/// `P: AnyObject`; Swift does not let such an existential satisfy an `AnyObject` constraint,
/// so the dispatcher checks at ``add(_:)`` that the value is a class instance).
///
/// Thread-safety: `Sendable`. Observers must be `Sendable` (thread-safe, or isolated to an
/// actor such as the main actor and hopping to it), since they are called on the target's
/// thread. One mutex, taken per add, remove and dispatch (not per observer).
public final class MultiDispatcher<Observer: Sendable>: Sendable {
    /// One weakly held observer; `removed` lets an in-progress dispatch skip it without a lock.
    final class Entry: @unchecked Sendable {  // immutable weak ref to a Sendable observer
        weak let object: AnyObject?
        let identity: ObjectIdentifier
        let removed = Atomic<Bool>(false)

        init(_ object: AnyObject) {
            self.object = object
            identity = ObjectIdentifier(object)
        }

        /// The observer, unless removed or deallocated. (Stored as `AnyObject` because the
        /// weak reference needs a class type; the cast back cannot fail, `add` stored an
        /// `Observer`.)
        var live: Observer? { removed.load(ordering: .acquiring) ? nil : object as? Observer }
    }

    /// The class instance behind `observer`; traps for a value type, which cannot be held weakly.
    private static func instance(_ observer: Observer) -> AnyObject {
        if !(type(of: observer as Any) is AnyClass) {
            fatalError("MultiDispatcher observers must be class instances (got \(type(of: observer as Any)))")
        }
        return observer as AnyObject
    }

    /// The default target of ``dispatch(_:)``.
    public let target: DispatchTarget
    private let entries = Locked<[Entry]>([])

    /// A dispatcher whose ``dispatch(_:)`` runs on `target` (synchronous by default).
    public init(target: DispatchTarget = .synchronous) {
        self.target = target
    }

    /// Registers `observer` (weakly). Adding it again has no effect.
    public func add(_ observer: Observer) {
        let entry = Entry(Self.instance(observer))
        entries.withLock { list in
            list.removeAll { $0.object == nil }
            guard !list.contains(where: { $0.identity == entry.identity && $0.object != nil }) else { return }
            list.append(entry)
        }
    }

    /// Unregisters `observer`; returns whether it was registered. Not needed before an
    /// observer's deinit.
    @discardableResult
    public func remove(_ observer: Observer) -> Bool {
        let identity = ObjectIdentifier(Self.instance(observer))
        return entries.withLock { list in
            guard let index = list.firstIndex(where: { $0.identity == identity && $0.object != nil }) else {
                list.removeAll { $0.object == nil }
                return false
            }
            list[index].removed.store(true, ordering: .releasing)
            list.remove(at: index)
            list.removeAll { $0.object == nil }
            return true
        }
    }

    /// The observers registered and still alive.
    public var observerCount: Int {
        entries.withLock { $0.reduce(0) { $1.object == nil ? $0 : $0 + 1 } }
    }

    /// Forwards `call` to every observer on ``target``. For an actor target, returns the
    /// outcome of handing the call to it (a dead letter if that actor has stopped); for the
    /// synchronous target, `.enqueued` once every observer was called.
    @discardableResult
    public func dispatch(_ call: @escaping @Sendable (Observer) -> Void) -> TellOutcome {
        switch target.kind {
        case .synchronous:
            dispatchSynchronously(call)
            return .enqueued
        case .enqueue(let send):
            return send(DispatchJob { [self] in dispatchSynchronously(call) })
        }
    }

    /// Forwards `call` to every observer now, on the calling thread, whatever the target: every
    /// observer has handled the call when it returns. Returns how many observers were called.
    @discardableResult
    public func dispatchSynchronously(_ call: (Observer) -> Void) -> Int {
        let snapshot = entries.withLock { $0 }
        var called = 0
        for entry in snapshot {
            guard let observer = entry.live else { continue }
            call(observer)
            called += 1
        }
        return called
    }
}

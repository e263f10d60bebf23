public import TroupeLocks

/// A lock around a value for test helpers: the runtime's own pthread-mutex lock.
///
/// Not `Synchronization.Mutex`: ThreadSanitizer understands pthread mutexes (it intercepts
/// them) but not `Mutex` on Linux, so with `Mutex` TSan would report races on data that is only
/// ever touched under the lock and bury real reports from the runtime.
public typealias TestLock = Locked

/// Maps a ``Terminated`` notice to a watcher's message type.
final class NoticeMapping<Message> {
    let map: (Terminated) -> Message
    init(_ map: @escaping (Terminated) -> Message) { self.map = map }
}

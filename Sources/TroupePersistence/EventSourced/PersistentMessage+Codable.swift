/// A durable actor's message is `Codable` when its command is, so that commands can travel to
/// the actor's node (as TroupeClusterEntities sends them to a durable entity's home). A message
/// encodes as its command alone, with nothing around it, and decodes as a command. The journal's
/// answers to the actor are made on its node and never travel: encoding one throws.
extension PersistentMessage: Codable where Command: Codable {
    public init(from decoder: any Decoder) throws {
        self = .command(try Command(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        guard case .command(let command) = kind else {
            throw EncodingError.invalidValue(
                "\(kind)",
                .init(
                    codingPath: encoder.codingPath,
                    debugDescription: "only a durable actor's commands travel; the journal's answers stay on its node"))
        }
        try command.encode(to: encoder)
    }
}

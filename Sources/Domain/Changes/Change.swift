/// One document change: what a mutation appends to the change log per document and the unit the
/// realtime feed pushes (`changes:[{kind, op, id, doc?, reason?}]`).
public struct Change: Sendable, Equatable {
    /// `added | modified | removed` (docs/design.md#realtime); the log's CHECK constraint admits only these.
    public enum Op: String, Sendable, Codable { case added, modified, removed }
    /// The feed the change goes to: `user:<id>`, `group:<id>` (or `system` for the log's own rows).
    public var topic: String
    /// What kind of document it is.
    public var kind: ChangeKind
    /// Whether the document appeared, changed or went away.
    public var op: Op
    /// The document's id.
    public var entityID: String
    /// The whole new document as JSON; nil when removed.
    public var document: [UInt8]?
    /// Stored text for the audit trail (a status or an operator's note); never sent to clients.
    public var reason: String?

    /// A change of `kind`/`entityID` on `topic`.
    public init(
        topic: String, kind: ChangeKind, op: Op, entityID: String, document: [UInt8]?, reason: String? = nil
    ) {
        self.topic = topic
        self.kind = kind
        self.op = op
        self.entityID = entityID
        self.document = document
        self.reason = reason
    }
}

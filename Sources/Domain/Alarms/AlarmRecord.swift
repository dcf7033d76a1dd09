/// What both alarm documents, shared and personal, hold besides the alarm fields and their kind's own:
/// the record's identity, version, master switch, next fire and timestamps (`AlarmSettings.RecordKeys`).
protocol AlarmRecord {
    var id: String { get }
    var isEnabled: Bool { get }
    var nextFireAt: Timestamp? { get }
    var version: Int64 { get }
    var createdAt: Timestamp { get }
    var updatedAt: Timestamp { get }
    var deletedAt: Timestamp? { get }
}

extension AlarmRecord {
    /// Writes the record's keys into the document `encoder` is writing (explicit nulls).
    func encodeRecord(to encoder: any Encoder) throws {
        var r = encoder.container(keyedBy: AlarmSettings.RecordKeys.self)
        try r.encode(id, forKey: .id)
        try r.encode(isEnabled, forKey: .isEnabled)
        try r.encode(nextFireAt, forKey: .nextFireAt)
        try r.encode(version, forKey: .version)
        try r.encode(createdAt, forKey: .createdAt)
        try r.encode(updatedAt, forKey: .updatedAt)
        try r.encode(deletedAt, forKey: .deletedAt)
    }
}

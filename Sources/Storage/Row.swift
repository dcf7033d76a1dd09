/// The column names of one result set, shared by all its rows.
public final class ColumnNames: Sendable {
    /// Names in column order.
    public let names: [String]
    /// First column index for each name.
    let indexByName: [String: Int]

    /// Indexes `names`; with duplicate names (a join), the first column wins.
    public init(_ names: [String]) {
        self.names = names
        var index: [String: Int] = [:]
        for (position, name) in names.enumerated() where index[name] == nil { index[name] = position }
        self.indexByName = index
    }
}

/// A materialised result row: values by column name or index. Asking for a column the row does
/// not have is a programming error and traps, like an array index out of range.
public struct Row: Sendable {
    /// The shared column names.
    let columns: ColumnNames
    /// The values, in column order.
    public let values: [SQLValue]

    /// Pairs shared column names with one row's values.
    public init(columns: ColumnNames, values: [SQLValue]) {
        self.columns = columns
        self.values = values
    }

    /// The column names, in order.
    public var columnNames: [String] { columns.names }

    /// Whether the row has a column named `column`.
    public func hasColumn(_ column: String) -> Bool { columns.indexByName[column] != nil }

    /// The value of the column named `column` (the first one, if several share the name).
    public subscript(_ column: String) -> SQLValue {
        guard let index = columns.indexByName[column] else {
            preconditionFailure("Row has no column named '\(column)' (columns: \(columns.names))")
        }
        return values[index]
    }

    /// The value at column `index` (0-based).
    public subscript(_ index: Int) -> SQLValue { values[index] }

    /// The column as an integer; nil for NULL or any other storage class.
    public func int(_ column: String) -> Int64? {
        if case .integer(let value) = self[column] { value } else { nil }
    }

    /// The column as text; nil for NULL or any other storage class.
    public func string(_ column: String) -> String? {
        if case .text(let value) = self[column] { value } else { nil }
    }

    /// The column as bytes; nil for NULL or any other storage class.
    public func blob(_ column: String) -> [UInt8]? {
        if case .blob(let value) = self[column] { value } else { nil }
    }

    /// The column as a double (an integer converts); nil for NULL, text or blob.
    public func double(_ column: String) -> Double? {
        switch self[column] {
        case .real(let value): value
        case .integer(let value): Double(value)
        case .null, .text, .blob: nil
        }
    }
}

extension Row: CustomStringConvertible {
    /// "[id: 1, name: 'x']".
    public var description: String {
        "[" + zip(columns.names, values).map { "\($0): \($1)" }.joined(separator: ", ") + "]"
    }
}

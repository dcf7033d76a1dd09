import Foundation

/// One `chronir-server` option, declared once in `ServerOptions.all`: its flag (`--name`), its
/// environment variable (`CHRONIR_NAME`), the default as `--help` and docs/configuration.md show it,
/// its help text, and how its text sets `ChronirConfiguration`. `--help`, the environment, the
/// defaults and the document's tables all come from these declarations.
public struct ServerOption {
    /// Where the option is listed: a heading of `--help` and of docs/configuration.md.
    public enum Section: String, CaseIterable, Sendable {
        case server = "chronir-server"
        case notifications = "Notifications"
        case mail = "Mail"
        case signIn = "Sign in with Apple and Google"
        case subscriptions = "Subscriptions"
        case tls = "TLS"
    }

    /// The flag without its dashes: `port` is `--port` and `CHRONIR_PORT`.
    public let name: String
    public let section: Section
    /// The value's placeholder in `--help` (`<port>`); nil for a switch (`--push-allow-private-endpoints`).
    public let valueName: String?
    /// The default as shown: a literal (`8080`, written in backticks in the document) or words.
    public let defaultValue: Default
    /// What the option does, in the document's Markdown (code spans, links); `--help` shows it plain.
    public let help: String
    /// Sets the configuration from the option's text (a switch gets `"true"`); an `Invalid` names
    /// the accepted values.
    let apply: (String, inout ChronirConfiguration) throws(Invalid) -> Void

    public enum Default: Equatable, Sendable {
        /// A value the option takes as written: `--port`'s `8080`.
        case literal(String)
        /// A description: "active processors", "off".
        case words(String)
    }

    /// Why a text was refused: the accepted values, e.g. `0–65535`.
    public struct Invalid: Error, Sendable {
        public let expected: String
        public init(_ expected: String) { self.expected = expected }
    }

    public var flag: String { "--" + name }
    public var environmentVariable: String { "CHRONIR_" + name.uppercased().replacing("-", with: "_") }
    public var isSwitch: Bool { valueName == nil }
}

/// A `chronir-server` command line or environment that cannot start a server: the message names the
/// flag and what it accepts (`invalid value 'x' for --port: 0–65535`). Nothing has been opened yet.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension ServerOption {
    /// A text option stored as written (an empty text counts as unset before it gets here).
    static func text(
        _ name: String, _ section: Section, _ valueName: String, _ defaultValue: Default,
        _ keyPath: WritableKeyPath<ChronirConfiguration, String?>, help: String
    ) -> ServerOption {
        ServerOption(name: name, section: section, valueName: valueName, defaultValue: defaultValue, help: help) {
            text, configuration throws(Invalid) in configuration[keyPath: keyPath] = text
        }
    }

    /// A text option with a default, replaced by the text.
    static func text(
        _ name: String, _ section: Section, _ valueName: String, _ defaultValue: Default,
        _ keyPath: WritableKeyPath<ChronirConfiguration, String>, help: String
    ) -> ServerOption {
        ServerOption(name: name, section: section, valueName: valueName, defaultValue: defaultValue, help: help) {
            text, configuration throws(Invalid) in configuration[keyPath: keyPath] = text
        }
    }

    /// A whole number within `range`.
    static func integer<T: FixedWidthInteger & Sendable>(
        _ name: String, _ section: Section, _ valueName: String, _ defaultValue: Default, _ range: ClosedRange<T>,
        _ keyPath: WritableKeyPath<ChronirConfiguration, T>, help: String
    ) -> ServerOption {
        ServerOption(name: name, section: section, valueName: valueName, defaultValue: defaultValue, help: help) {
            text, configuration throws(Invalid) in configuration[keyPath: keyPath] = try parse(text, in: range)
        }
    }

    /// A whole number within `range`, nil when unset (its default is computed from other settings).
    static func integer<T: FixedWidthInteger & Sendable>(
        _ name: String, _ section: Section, _ valueName: String, _ defaultValue: Default, _ range: ClosedRange<T>,
        _ keyPath: WritableKeyPath<ChronirConfiguration, T?>, help: String
    ) -> ServerOption {
        ServerOption(name: name, section: section, valueName: valueName, defaultValue: defaultValue, help: help) {
            text, configuration throws(Invalid) in configuration[keyPath: keyPath] = try parse(text, in: range)
        }
    }

    /// One of an enumeration's raw values, case-insensitively.
    static func choice<T: RawRepresentable & CaseIterable>(
        _ name: String, _ section: Section, _ defaultValue: Default, _ keyPath: WritableKeyPath<ChronirConfiguration, T>,
        help: String
    ) -> ServerOption where T.RawValue == String {
        let values = T.allCases.map(\.rawValue)
        return ServerOption(
            name: name, section: section, valueName: values.joined(separator: "|"), defaultValue: defaultValue, help: help
        ) { text, configuration throws(Invalid) in
            guard let value = T(rawValue: text.lowercased()) else { throw Invalid(values.joined(separator: ", ")) }
            configuration[keyPath: keyPath] = value
        }
    }

    /// A comma-separated list; blank entries are dropped.
    static func list(
        _ name: String, _ section: Section, _ valueName: String, _ defaultValue: Default,
        _ keyPath: WritableKeyPath<ChronirConfiguration, [String]>, help: String
    ) -> ServerOption {
        ServerOption(name: name, section: section, valueName: valueName, defaultValue: defaultValue, help: help) {
            text, configuration throws(Invalid) in configuration[keyPath: keyPath] = splitList(text)
        }
    }

    /// A switch: on when the flag is given or its variable is `1`, `true` or `yes`.
    static func toggle(
        _ name: String, _ section: Section, _ keyPath: WritableKeyPath<ChronirConfiguration, Bool>, help: String
    ) -> ServerOption {
        ServerOption(name: name, section: section, valueName: nil, defaultValue: .words("off"), help: help) {
            text, configuration throws(Invalid) in configuration[keyPath: keyPath] = ["1", "true", "yes"].contains(text.lowercased())
        }
    }

    static func parse<T: FixedWidthInteger>(_ text: String, in range: ClosedRange<T>) throws(Invalid) -> T {
        guard let value = T(text), range.contains(value) else { throw Invalid("a whole number, \(range.lowerBound)–\(range.upperBound)") }
        return value
    }

    static func splitList(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

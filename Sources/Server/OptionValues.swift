import ArgumentParser
import Foundation

/// Where every `chronir-server` option's value comes from (docs/configuration.md): the flag, else
/// its `CHRONIR_<NAME>` environment variable; an empty value counts as unset. `parse` names a value
/// that does not convert the same way for every option, before anything is opened.
struct OptionValues {
    let environment: [String: String]

    /// The flag's text, else the variable's; nil when neither is set or the one set is empty.
    func value(_ flag: String?, _ name: String) -> String? {
        (flag ?? environment["CHRONIR_\(name)"]).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// A switch: the flag given, or the variable set to `1`, `true` or `yes`.
    func isOn(_ flag: Bool, _ name: String) -> Bool {
        flag || ["1", "true", "yes"].contains(environment["CHRONIR_\(name)"]?.lowercased() ?? "")
    }

    /// The converted value, `fallback` when unset; `invalid value '…' for <flag-name>` when set to
    /// a value `convert` rejects.
    func parse<T>(_ flag: String?, _ name: String, _ fallback: T, _ convert: (String) -> T?) throws -> T {
        guard let text = value(flag, name) else { return fallback }
        guard let parsed = convert(text) else {
            throw ValidationError("invalid value '\(text)' for \(name.lowercased().replacingOccurrences(of: "_", with: "-"))")
        }
        return parsed
    }

    /// An option without a default: nil when unset, an error when set to a value `convert`
    /// rejects. (Through `parse` with T = Int?, a rejected value would be `.some(nil)`: unset.)
    func parseOptional<T>(_ flag: String?, _ name: String, _ convert: (String) -> T?) throws -> T? {
        try parse(flag, name, T?.none) { text -> T?? in convert(text).map { Optional($0) } }
    }
}

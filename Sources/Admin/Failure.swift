import ArgumentParser
import Domain
import Storage
import Store

/// A failure explained to the operator; exits 1.
struct AdminError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }

    /// `error` in words an operator can act on: Store and SQLite errors become an `AdminError`
    /// (exit 1 with the message); ArgumentParser's own errors and exit codes pass through unchanged.
    static func explaining(_ error: any Error) -> any Error {
        switch error {
        case let error as DomainError: AdminError(describe(error))
        case _ where error.violatedRule == .groupFrozen:
            AdminError("the group is frozen (read-only for everyone); run `groups unfreeze` first")
        case let error as any StorageFailure where error.isBusy:
            AdminError("the database stayed locked by another writer past the busy timeout; try again (\(error.message))")
        case let error as any StorageFailure: AdminError("database error: \(error)")
        case let error as StoreError: AdminError("\(error)")
        default: error
        }
    }

    static func describe(_ error: DomainError) -> String {
        switch error {
        case .notFound("member"): "that user is not an active member of the group"
        case .notFound(let what): "no such \(what) (unknown or deleted)"
        case .invalidField(let field, let message): "\(field): \(message)"
        case .invalidSchedule(let field, let message): "\(field): \(message)"
        case .permissionDenied(let message): message
        case .tierRequired(let message), .subscriptionExpired(let message): message
        case .ownerMustTransfer: "the owner cannot be removed or leave: make another member the owner first (`groups transfer`)"
        case .emailTaken: "that email is already registered"
        case .groupMemberLimit: "the group is full (max_members reached)"
        case .invitationExpired: "the invitation has expired"
        case .invitationAlreadyAccepted: "the invitation was already answered"
        case .accountSuspended: "the account is suspended"
        case .inviteCodeInvalid: "the invite code is not usable"
        case .alarmNotFound: "no such shared alarm (unknown or deleted)"
        case .alarmLimitReached: "the group already has the maximum number of live shared alarms"
        case .versionConflict: "the document changed meanwhile; try again"
        case .tokenInvalid: "the link is not valid (used, expired or unknown)"
        case .emailNotVerified: "the account's email address is not verified"
        case .identityLinkRefused(let reason): "the identity cannot be linked: \(reason)"
        case .lastSignInMethod: "that is the account's last way to sign in"
        case .passwordNotSet: "the account has no password"
        case .rateLimited(let seconds): "rate limited; retry in \(seconds) s"
        case .alarmNotDone: "the shared alarm is not done, so it cannot be archived"
        case .authenticationRequired, .invalidCredentials, .occurrenceClosed, .answerTooEarly, .answerWithdrawalClosed,
            .rejoinNeedsNewInvite:
            "\(error)"
        }
    }
}

extension ChronirAdmin {
    /// Parses the command line (options every command takes may also come before the command),
    /// runs it, and turns a failure into a message on stderr and the exit status docs/admin.md documents.
    static func main() {
        do {
            var command = try parseAsRoot(hoistingSharedOptions(Array(CommandLine.arguments.dropFirst())))
            try command.run()
        } catch {
            exit(withError: AdminError.explaining(error))
        }
    }

    /// Moves `AdminOptions` given before the command (`--db FILE db check`) to the end, where the
    /// subcommand that declares them parses them. ArgumentParser has no inherited options, and
    /// repeating `@OptionGroup` on every parent would make them parse in two places.
    static func hoistingSharedOptions(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var rest = arguments[...]
        while let first = rest.first {
            if first == "--json" {
                leading.append(first)
                rest = rest.dropFirst()
            } else if ["--db", "--data-dir"].contains(first), rest.count >= 2 {
                leading += rest.prefix(2)
                rest = rest.dropFirst(2)
            } else if first.hasPrefix("--db=") || first.hasPrefix("--data-dir=") {
                leading.append(first)
                rest = rest.dropFirst()
            } else {
                break
            }
        }
        return Array(rest) + leading
    }
}

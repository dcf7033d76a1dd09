import TestSupport
import Testing
import Wire

@testable import App

// The runner of the authorization matrices (AuthorizationMatrixTests, SharedAlarmAuthorizationTests).
// A matrix is data: the roles it checks, and its endpoints, each one line — its name as the router
// spells it, the status every role gets, and the request it makes. The runner plays one
// (endpoint, role) cell on a fresh `GroupFixture`, so mutations of one cell cannot leak into another.

/// A relation to the fixture's group, played by one of `GroupFixture`'s accounts.
enum MatrixRole: String, Sendable {
    case owner, admin, member
    /// A plain member the shared alarm is not assigned to (`GroupFixture.other`).
    case nonAssignee
    case removed, left, outsider
    /// No token at all.
    case anonymous

    /// The account playing this role in `fixture` (nil: anonymous).
    func account(in fixture: GroupFixture) -> GroupFixture.Account? {
        switch self {
        case .owner: fixture.owner
        case .admin: fixture.admin
        case .member: fixture.member
        case .nonAssignee: fixture.other
        case .removed: fixture.removed
        case .left: fixture.left
        case .outsider: fixture.outsider
        case .anonymous: nil
        }
    }
}

/// What an endpoint's request has to hand: the fixture, the acting account, and what the
/// matrix's `prepare` made before the call (e.g. an alarm's path).
struct MatrixCall<Prepared: Sendable> {
    let fixture: GroupFixture
    /// The account of the role being checked (nil: anonymous).
    let actor: GroupFixture.Account?
    let prepared: Prepared

    var h: AppHarness { fixture.h }
    /// `/v1/groups/{id}` of the fixture's group.
    var group: String { "/v1/groups/\(fixture.groupID)" }

    /// Sends the request as the role being checked.
    func send(_ method: HTTPMethod, _ target: String, json: String? = nil) async -> Reply {
        await h.send(method, target, json: json, token: actor?.token)
    }
}

/// One row of a matrix: an endpoint, the status each role gets (in the matrix's `roles` order),
/// and the request that exercises it.
struct MatrixEndpoint<Prepared: Sendable>: Sendable {
    /// `METHOD /template` as the router spells it (a suffix such as `{self}` tells variants apart).
    let name: String
    let statuses: [Int]
    /// Error names that differ from `AuthorizationMatrix.errorNames` for this endpoint.
    let errors: [Int: String]
    let request: @Sendable (MatrixCall<Prepared>) async throws -> Reply

    init(
        _ name: String, _ statuses: [Int], errors: [Int: String] = [:],
        _ request: @escaping @Sendable (MatrixCall<Prepared>) async throws -> Reply
    ) {
        self.name = name
        self.statuses = statuses
        self.errors = errors
        self.request = request
    }
}

/// The gate every matrix cell passes: the two matrices' 537 cells are started at once as test cases,
/// and as many fixtures at once would starve the shared Dispatch pool that timing-sensitive suites
/// elsewhere rely on; one at a time made the matrices the longest suites of every run.
let matrixCellsAtOnce = AsyncGate(width: 3)

/// One (endpoint, role) check: the test argument.
struct MatrixCell<Prepared: Sendable>: Sendable, CustomTestStringConvertible {
    let endpoint: MatrixEndpoint<Prepared>
    let role: MatrixRole
    let status: Int
    /// The `error.name` the answer must carry (nil: a success, not checked).
    let errorName: String?
    var testDescription: String { "\(endpoint.name) as \(role.rawValue) → \(status)" }
}

/// Roles × endpoints → expected status (and error name), and the runner of one cell.
struct AuthorizationMatrix<Prepared: Sendable>: Sendable {
    /// The error name each refusal status carries unless an endpoint says otherwise.
    static var errorNames: [Int: String] {
        [401: "AUTH_REQUIRED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 409: "OWNER_MUST_TRANSFER"]
    }

    let roles: [MatrixRole]
    let endpoints: [MatrixEndpoint<Prepared>]
    /// Runs on each cell's fresh fixture before the request (as the owner, not the role checked).
    let prepare: @Sendable (GroupFixture) async throws -> Prepared

    /// Every cell, endpoint by endpoint, role by role.
    var cells: [MatrixCell<Prepared>] {
        endpoints.flatMap { endpoint in
            zip(roles, endpoint.statuses).map { role, status in
                MatrixCell(
                    endpoint: endpoint, role: role, status: status,
                    errorName: endpoint.errors[status] ?? Self.errorNames[status])
            }
        }
    }

    /// Whether every endpoint has one status per role and no name appears twice.
    var isComplete: Bool {
        cells.count == endpoints.count * roles.count && endpoints.allSatisfy { $0.statuses.count == roles.count }
            && Set(endpoints.map(\.name)).count == endpoints.count
    }

    /// Plays `cell` on a fresh fixture and checks the answer's status and error name; then drops the
    /// fixture's database. At most `matrixCellsAtOnce` cells of all matrices run at a time.
    func run(_ cell: MatrixCell<Prepared>) async throws {
        try await matrixCellsAtOnce.run { try await play(cell) }
    }

    private func play(_ cell: MatrixCell<Prepared>) async throws {
        let fixture = try await GroupFixture.make()
        let prepared = try await prepare(fixture)
        let reply = try await cell.endpoint.request(
            MatrixCall(fixture: fixture, actor: cell.role.account(in: fixture), prepared: prepared))
        #expect(reply.status == cell.status, "\(reply.text)")
        if let name = cell.errorName { #expect(reply.errorName == name, "\(reply.text)") }
        try fixture.h.dropDatabase()
    }
}

extension AuthorizationMatrix where Prepared == Void {
    /// A matrix whose requests need nothing prepared beyond the fixture.
    init(roles: [MatrixRole], endpoints: [MatrixEndpoint<Void>]) {
        self.init(roles: roles, endpoints: endpoints, prepare: { _ in })
    }
}

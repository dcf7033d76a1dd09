-- 0012: registrations admitted per client network, in the database rather than in one process's
-- memory, so the per-address and total hourly limits (--registrations-per-ip-per-hour,
-- --registrations-per-hour) hold across restarts and across every instance on one database
-- (RegistrationAdmissions). Rows older than the window are deleted by the next admission.
CREATE TABLE registration_admissions (
    id              INTEGER PRIMARY KEY,
    network         TEXT NOT NULL,                 -- ClientNetwork.rateLimitKey: an IPv4 address, an IPv6 /64
    at_ms           INTEGER NOT NULL
) STRICT;
CREATE INDEX registration_admissions_network ON registration_admissions(network, at_ms);
CREATE INDEX registration_admissions_at ON registration_admissions(at_ms);

// RealtimeTests

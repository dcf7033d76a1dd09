// DomainTests

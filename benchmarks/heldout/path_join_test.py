def test_url_join(candidate):
    assert candidate("https://api.example.com/", "/users/", 42) == "https://api.example.com/users/42"
    assert candidate("/api", "users", "") == "/api/users" and candidate("/api/", "/v2/users") == "/api/v2/users"
    assert candidate("/", "health") == "/health" and candidate("/") == "/" and candidate("") == "/"
    assert candidate("/api", "export/") == "/api/export/" and candidate("/api", "x", trailing_slash=True) == "/api/x/"
    assert candidate("/files", "my report.pdf") == "/files/my%20report.pdf"
    assert candidate("http://h:8080/v1", "search?q=a") == "http://h:8080/v1/search?q=a"

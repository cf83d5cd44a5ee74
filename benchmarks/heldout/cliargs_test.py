def test_parse_args(candidate):
    p = deploy_parser()
    values, rest = candidate(p, ["-vn", "--target=prod", "-x", "db", "-xcache", "app", "--", "-v"])
    assert values == {"verbose": True, "dry_run": True, "target": "prod", "exclude": ["db", "cache"]}
    assert rest == ["app", "-v"]
    values, rest = candidate(p, ["-nt", "qa", "web"])
    assert values["dry_run"] is True and values["target"] == "qa" and values["verbose"] is None
    assert rest == ["web"]
    assert candidate(p, [])[0] == {"verbose": None, "dry_run": None, "target": "staging", "exclude": []}
    for bad in (["--verbose=1"], ["--target"], ["-q"], ["--colour"]):
        try:
            candidate(p, bad)
        except UsageError:
            pass
        else:
            raise AssertionError(f"accepted {bad}")


def test_Parser(candidate):
    parser = candidate("deploy").add("verbose", "v", help="say more").add("dry-run", "n", help="print the steps")
    text = parser.add("target", "t", True, help="where to deploy").usage()
    assert text.splitlines()[0] == "usage: deploy [options] [args...]"
    assert "  -t, --target  VALUE  where to deploy" in text and "  -n, --dry-run  print the steps" in text


def test_deploy_parser(candidate):
    assert [o.dest for o in candidate().options] == ["verbose", "dry_run", "target", "exclude"]

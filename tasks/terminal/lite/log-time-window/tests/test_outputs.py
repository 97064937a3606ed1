def test_window():
    assert open("/app/window.log").read() == "2024-03-01T10:00:00 start\n2024-03-01T10:15:42 work\n2024-03-01T10:30:00 end\n"

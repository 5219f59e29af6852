module example.com/wharf-consumer

go 1.19

require wharf.dev/wharf v0.3.0

replace wharf.dev/wharf => ../wharf

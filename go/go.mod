module wharf.dev/wharf

go 1.19

module toolhost.example/hello_go

go 1.19
